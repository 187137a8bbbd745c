/* Variable-number system-call sites (issue 14): a `syscall` whose number is in a register
 * nobody can prove constant (an argument here, as in libgomp's futex calls and in syscall()
 * wrappers), after a window of register loads that the kernel rewrites into a call to a slot
 * replaying them. What must not change:
 *   calls     getppid, gettid and getpid through seven site shapes (windows of 5, 6, 7, 8 and
 *             13 bytes: a register move, an lea, two moves, a load of a global; a loop whose
 *             branch lands on the window's first instruction; a `test` and a branch out of the
 *             window taken or not; glibc's read(), a compare of a global and a branch, or a
 *             load from the stack frame), different numbers through the same site, from two
 *             threads at once while the sites get rewritten; lseek through glibc's futex-flag
 *             shapes (windows of 20 and 24 bytes whose `xor $0x80, %sil` changes a register
 *             the window set first, from a move or a load through another register): the
 *             offset it returns shows the flag applied once; through glibc's
 *             sched_getaffinity shape (a `cmovbe` clamping the offset), both ways; and
 *             lseek, getpid and gettid through musl's syscall() shape (the window's last
 *             load overwrites the register it loads through)
 *   restart   a thread blocks in read() through the two-move site, the global-load site and
 *             both of the read() shapes, while a SA_RESTART handler interrupts it and zeroes
 *             what the window loads the length from (the register in the frame, the global):
 *             Linux makes the `syscall` again with the length already loaded, so each read
 *             returns its byte
 *   restart_patched  the same, the main thread spinning while the reader gets to each read:
 *             the reader's first call through the global-load site finds the other CPU
 *             busy, so the kernel patches the site later, at the 16th call through it, which
 *             the handler makes while the interrupted read waits in its frame to be made
 *             again at the old `syscall`
 *   resume    a handler sends the thread into a rewritten window (the middle of the two moves,
 *             the global-load site's `syscall`, past the branch of the test-and-branch window,
 *             before the last load of musl's shape, which overwrites the register it reads)
 *             with the registers the old code had there: it must make the call and go on
 *   spin      three threads spin on variable sites while the main thread sends them signals
 *             whose handler makes the same calls: no result is wrong, every signal is handled
 * Prints the same lines natively and under hrt. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

#include "ring_sites.h"

/* Each function takes the number first, then up to three arguments (rdi, rsi, rdx). */
__asm__(".text\n"
        /* window `mov %r10d, %eax; syscall` (5 bytes) */
        ".globl var_call\n.type var_call,@function\nvar_call:\n"
        "  mov %rdi, %r10\n"
        "  mov %rsi, %rdi\n"
        "  mov %rdx, %rsi\n"
        "  mov %rcx, %rdx\n"
        "  mov %r10d, %eax\n"
        "  syscall\n"
        "  ret\n"
        ".size var_call, .-var_call\n"
        /* window `lea 8(%rsi), %rdi; syscall` (6 bytes), the number in rax before it */
        ".globl var_lea\n.type var_lea,@function\nvar_lea:\n"
        "  mov %rdi, %rax\n"
        "  lea 8(%rsi), %rdi\n"
        "  syscall\n"
        "  ret\n"
        ".size var_lea, .-var_lea\n"
        /* window `mov %r10d, %eax; mov %ecx, %edx; syscall` (7 bytes): the third argument
         * (the length) comes from rcx */
        ".globl var_pair\n.type var_pair,@function\nvar_pair:\n"
        "  mov %rdi, %r10\n"
        "  mov %rsi, %rdi\n"
        "  mov %rdx, %rsi\n"
        "  mov %r10d, %eax\n"
        "  mov %ecx, %edx\n"
        "  syscall\n"
        "  ret\n"
        ".size var_pair, .-var_pair\n"
        /* window `mov var_len(%rip), %edx; syscall` (8 bytes): the third argument is var_len */
        ".globl var_global\n.type var_global,@function\nvar_global:\n"
        "  mov %rdi, %rax\n"
        "  mov %rsi, %rdi\n"
        "  mov %rdx, %rsi\n"
        "  mov var_len(%rip), %edx\n"
        "  syscall\n"
        "  ret\n"
        ".size var_global, .-var_global\n"
        /* var_loop(nr, n, expected): n calls of nr through one site whose window (`mov %r9d,
         * %eax; mov %ebx, %edi`) starts at the loop's head; returns how many were wrong. */
        ".globl var_loop\n.type var_loop,@function\nvar_loop:\n"
        "  push %rbx\n"
        "  mov %rdi, %r9\n"
        "  mov %rdx, %rbx\n"
        "  xor %r8d, %r8d\n"
        "1:\n"
        "  mov %r9d, %eax\n"
        "  mov %ebx, %edi\n"
        "  syscall\n"
        "  cmp %rax, %rbx\n"
        "  setne %al\n"
        "  movzbl %al, %eax\n"
        "  add %rax, %r8\n"
        "  dec %rsi\n"
        "  jnz 1b\n"
        "  mov %r8, %rax\n"
        "  pop %rbx\n"
        "  ret\n"
        ".size var_loop, .-var_loop\n"
        /* var_branch(a, fast, b, nr): window `test %esi, %esi; je 2f; mov %ecx, %eax; syscall`
         * (8 bytes: the last two alone leave no room for the call, and the branch's flags come
         * from the test); when `fast` is 0 the branch leaves the window for a path that makes
         * the call through a site of its own and adds 1000, or returns -1 if its stack still
         * holds a return address into the window (the slot's `call` pushed one). */
        ".globl var_branch\n.type var_branch,@function\nvar_branch:\n"
        "  test %esi, %esi\n"
        "  je 2f\n"
        "  mov %ecx, %eax\n"
        "  syscall\n"
        "1:\n"
        "  ret\n"
        "2:\n"
        "  lea 1b(%rip), %r8\n"
        "  cmp %r8, (%rsp)\n"
        "  je 3f\n"
        "  mov %ecx, %eax\n"
        "  syscall\n"
        "  add $1000, %rax\n"
        "  ret\n"
        "3:\n"
        "  mov $-1, %rax\n"
        "  ret\n"
        ".size var_branch, .-var_branch\n"
        /* var_read(fd, buf, len): glibc's read() in both its shapes. With var_fast set, the
         * window `cmpb $0, var_fast(%rip); je 2f; xor %eax, %eax; syscall` (13 bytes: a branch
         * on a global); else a frame and the window `mov 8(%rsp), %edi; xor %eax, %eax;
         * syscall` (a load from the stack, which the slot makes 8 bytes further up, past the
         * word its call pushed). */
        ".globl var_read\n.type var_read,@function\nvar_read:\n"
        "  cmpb $0, var_fast(%rip)\n"
        "  je 2f\n"
        "  xor %eax, %eax\n"
        "  syscall\n"
        "  ret\n"
        "2:\n"
        "  sub $24, %rsp\n"
        "  mov %edi, 8(%rsp)\n"
        "  mov $-1, %edi\n"
        "  mov 8(%rsp), %edi\n"
        "  xor %eax, %eax\n"
        "  syscall\n"
        "  add $24, %rsp\n"
        "  ret\n"
        ".size var_read, .-var_read\n"
        /* var_flag(nr, fd, words): glibc's futex-flag shape with a load through a register, as
         * its barrier makes it: the window `mov 0xc(%r8), %esi; xor %r10d, %r10d; mov $0,
         * %edx; mov var_nr(%rip), %eax; xor $0x80, %sil; syscall` (24 bytes: the last `xor`
         * changes the register the first load set, so a replay must start there); the number
         * comes from var_nr, nr only checks it. lseek(fd, words[3] ^ 0x80, SEEK_SET). */
        ".globl var_flag\n.type var_flag,@function\nvar_flag:\n"
        "  mov %rdx, %r8\n"
        "  mov %rsi, %rdi\n"
        "  mov 0xc(%r8), %esi\n"
        "  xor %r10d, %r10d\n"
        "  mov $0, %edx\n"
        "  mov var_nr(%rip), %eax\n"
        "  xor $0x80, %sil\n"
        "  syscall\n"
        "  ret\n"
        ".size var_flag, .-var_flag\n"
        /* var_flag2(nr, fd, off): glibc's __lll_lock_wait shape, the register set by a move:
         * `mov %r8d, %esi; xor %r10d, %r10d; mov $0, %edx; mov %r9d, %eax; xor $0x80, %sil;
         * syscall` (20 bytes). lseek(fd, off ^ 0x80, SEEK_SET). */
        ".globl var_flag2\n.type var_flag2,@function\nvar_flag2:\n"
        "  mov %rdi, %r9\n"
        "  mov %rsi, %rdi\n"
        "  mov %rdx, %r8\n"
        "  mov %r8d, %esi\n"
        "  xor %r10d, %r10d\n"
        "  mov $0, %edx\n"
        "  mov %r9d, %eax\n"
        "  xor $0x80, %sil\n"
        "  syscall\n"
        "  ret\n"
        ".size var_flag2, .-var_flag2\n"
        /* var_cmov(nr, fd, off): glibc's sched_getaffinity shape, a size clamped by a
         * conditional move: `mov $1000, %esi; xor %edx, %edx; mov %r9d, %eax; cmp %rsi, %r8;
         * cmovbe %r8, %rsi; syscall` (19 bytes; the `cmovbe` reads the register the window
         * set first and the flags its `cmp` set). lseek(fd, min(off, 1000), SEEK_SET). */
        ".globl var_cmov\n.type var_cmov,@function\nvar_cmov:\n"
        "  mov %rdi, %r9\n"
        "  mov %rsi, %rdi\n"
        "  mov %rdx, %r8\n"
        "  mov $1000, %esi\n"
        "  xor %edx, %edx\n"
        "  mov %r9d, %eax\n"
        "  cmp %rsi, %r8\n"
        "  cmovbe %r8, %rsi\n"
        "  syscall\n"
        "  ret\n"
        ".size var_cmov, .-var_cmov\n"
        /* var_block(block): musl's syscall() shape, the arguments loaded through the register
         * the last load overwrites: the window `mov 0x18(%rdx), %rsi; mov (%rdx), %edx;
         * syscall` (8 bytes, its last instruction writing its own input); block is {third
         * argument (32 bits), nr, first, second}. */
        ".globl var_block\n.type var_block,@function\nvar_block:\n"
        "  mov %rdi, %rdx\n"
        "  mov 0x8(%rdx), %rax\n"
        "  mov 0x10(%rdx), %rdi\n"
        "  mov 0x18(%rdx), %rsi\n"
        "  mov (%rdx), %edx\n"
        "  syscall\n"
        "  ret\n"
        ".size var_block, .-var_block\n");
long var_call(long nr, long a, long b, long c);
long var_lea(long nr, long a);
long var_pair(long nr, long a, long b, long c);
long var_global(long nr, long a, long b);
long var_loop(long nr, long n, long expected);
long var_branch(long a, long fast, long b, long nr);
long var_read(long fd, void *buf, long len);
long var_flag(long nr, long fd, const int *words);
long var_flag2(long nr, long fd, long off);
long var_cmov(long nr, long fd, long off);
long var_block(const long *block);
int var_len = 1;
int var_nr = SYS_lseek;
static int seek_fd;
unsigned char var_fast;
static int zero_fd;

/* Offsets into var_pair (its second window instruction, `mov %ecx, %edx`, and its `syscall`)
 * and var_global (its `syscall`), checked against the bytes before any call. */
enum { PAIR_SECOND = 12, PAIR_SYSCALL = 14, GLOBAL_SYSCALL = 15, BRANCH_MOV = 4, BLOCK_LAST = 15 };

enum { CALLS = 20000 };

/* The calls case's thread; returns how many results were wrong. */
static long calls(void) {
    long bad = 0, ppid = getppid(), tid = syscall(SYS_gettid), pid = getpid();
    for (int i = 0; i < CALLS; i++) {
        bad += var_call(SYS_getppid, 0, 0, 0) != ppid;
        bad += var_call(SYS_gettid, 0, 0, 0) != tid;
        bad += var_lea(SYS_getpid, 0) != pid;
        bad += var_lea(SYS_getppid, 0) != ppid;
        bad += var_pair(SYS_gettid, 0, 0, 0) != tid;
        bad += var_pair(SYS_getpid, 0, 0, 0) != pid;
        bad += var_global(SYS_getppid, 0, 0) != ppid;
        bad += var_global(SYS_gettid, 0, 0) != tid;
        bad += var_branch(0, 1, 0, SYS_getppid) != ppid;
        bad += var_branch(0, 0, 0, SYS_getpid) != pid + 1000;
        /* Which read() path runs follows the other thread too: both give the same. */
        var_fast = i & 1;
        long word = -1;
        bad += var_read(zero_fd, &word, sizeof word) != sizeof word || word != 0;
        int words[4] = {0, 0, 0, i};
        bad += var_flag(SYS_lseek, seek_fd, words) != (i ^ 0x80);
        bad += var_flag2(SYS_lseek, seek_fd, i + 7) != ((i + 7) ^ 0x80);
        bad += var_cmov(SYS_lseek, seek_fd, i) != (i < 1000 ? i : 1000);
        long block[4] = {SEEK_SET, SYS_lseek, seek_fd, i + 3};
        bad += var_block(block) != i + 3;
        long pid_block[4] = {0, (i & 1) ? SYS_getpid : SYS_gettid, 0, 0};
        bad += var_block(pid_block) != ((i & 1) ? pid : tid);
    }
    bad += var_loop(SYS_getppid, CALLS, ppid);
    bad += var_loop(SYS_getpid, CALLS, pid);
    return bad;
}

static atomic_long handler_bad;

static void check_in_handler(void) {
    long ppid = getppid();
    if (var_call(SYS_getppid, 0, 0, 0) != ppid || var_global(SYS_getppid, 0, 0) != ppid ||
        var_loop(SYS_getppid, 3, ppid) != 0)
        atomic_fetch_add(&handler_bad, 1);
    atomic_fetch_add(&handled, 1);
}

/* Zeroes what the interrupted read's window loads its length from (rcx, var_len). */
static void zero_the_length(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)si;
    ((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RCX] = 0;
    var_len = 0;
    check_in_handler();
}

/* restart_patched's handler: zero_the_length's zeroing; and when the interrupted read came
 * through the global-load site (reads 1 and 4), 16 calls through that site first. The
 * kernel patches a site at its 16th call even while another CPU runs a thread, so the site
 * is patched while the read waits in this frame to be made again. No call through the site
 * in the other handlers: it must not be patched before. */
static void zero_the_length_patching(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)si;
    ((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RCX] = 0;
    var_len = 0;
    if (atomic_load(&handled) % 3 == 1) {
        long ppid = getppid();
        for (int i = 0; i < 16; i++)
            if (var_global(SYS_getppid, 0, 0) != ppid)
                atomic_fetch_add(&handler_bad, 1);
    }
    atomic_fetch_add(&handled, 1);
}

static void on_signal(int sig) {
    (void)sig;
    check_in_handler();
}

/* Read r goes through var_pair (the length from rcx), var_global (the length from var_len) or
 * var_read (either shape), in turn. */
static long read_byte(int r, int fd, char *c) {
    var_len = 1;
    var_fast = r / 3 % 2;
    switch (r % 3) {
    case 0:
        return var_pair(SYS_read, fd, (long)c, 1);
    case 1:
        return var_global(SYS_read, fd, (long)c);
    default:
        return var_read(fd, c, 1);
    }
}

static long spin_calls(long ppid) {
    return var_loop(SYS_getppid, 100, ppid) + (var_global(SYS_getppid, 0, 0) != ppid);
}

static long pair_getpid(void) { return var_pair(SYS_getpid, 0, 0, 0); }
static long branch_getpid(void) { return var_branch(0, 1, 0, SYS_getpid); }
static long global_getpid(void) { return var_global(SYS_getpid, 0, 0); }
static long getpid_block[4] = {0, SYS_getpid, 0, 0};
static long block_getpid(void) { return var_block(getpid_block); }

/* The offsets above point at the instructions they name (checked before any call). */
static int offsets_hold(void) {
    const unsigned char *pair = (const unsigned char *)(long)var_pair, *global = (const unsigned char *)(long)var_global;
    const unsigned char *branch = (const unsigned char *)(long)var_branch;
    const unsigned char *block = (const unsigned char *)(long)var_block;
    return pair[PAIR_SECOND] == 0x89 && pair[PAIR_SECOND + 1] == 0xca && pair[PAIR_SYSCALL] == 0x0f &&
           pair[PAIR_SYSCALL + 1] == 0x05 && global[GLOBAL_SYSCALL] == 0x0f && global[GLOBAL_SYSCALL + 1] == 0x05 &&
           branch[BRANCH_MOV] == 0x89 && branch[BRANCH_MOV + 1] == 0xc8 && block[BLOCK_LAST] == 0x8b &&
           block[BLOCK_LAST + 1] == 0x12 && block[BLOCK_LAST + 2] == 0x0f;
}

int main(int argc, char **argv) {
    warm_up_rewriting();
    const char *c = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!offsets_hold()) {
        fprintf(stderr, "ring_varsite: the offsets do not match the code\n");
        return 3;
    }
    zero_fd = open("/dev/zero", O_RDONLY);
    FILE *seek_file = tmpfile();
    seek_fd = seek_file ? fileno(seek_file) : -1;
    if (!strcmp(c, "calls")) {
        printf("calls: %d x 15 per thread, %ld wrong\n", CALLS, on_two_threads(calls));
    } else if (!strcmp(c, "restart")) {
        set_info_handler(SIGUSR1, zero_the_length, SA_RESTART);
        if (restart_reads(read_byte))
            return 1;
        printf("restart: %d handlers, %ld wrong in handlers\n", atomic_load(&handled), atomic_load(&handler_bad));
    } else if (!strcmp(c, "restart_patched")) {
        spin_for_reader = 1;
        set_info_handler(SIGUSR1, zero_the_length_patching, SA_RESTART);
        if (restart_reads(read_byte))
            return 1;
        printf("restart_patched: %d handlers, %ld wrong in handlers\n", atomic_load(&handled), atomic_load(&handler_bad));
    } else if (!strcmp(c, "resume")) {
        install_resume();
        long wrong = resume_rounds(pair_getpid, (long)var_pair + PAIR_SECOND, SYS_getpid);
        printf("resume inside the window: %d rounds, %ld wrong\n", ROUNDS, wrong);
        wrong = resume_rounds(global_getpid, (long)var_global + GLOBAL_SYSCALL, 0);
        printf("resume at the syscall: %d rounds, %ld wrong\n", ROUNDS, wrong);
        wrong = resume_rounds(branch_getpid, (long)var_branch + BRANCH_MOV, SYS_getpid);
        printf("resume past a branch: %d rounds, %ld wrong\n", ROUNDS, wrong);
        resume_rdx = (long)getpid_block;
        wrong = resume_rounds(block_getpid, (long)var_block + BLOCK_LAST, 0);
        printf("resume before a last load that overwrites its input: %d rounds, %ld wrong\n", ROUNDS, wrong);
        resume_rdx = 0;
    } else if (!strcmp(c, "spin")) {
        set_handler(SIGUSR1, on_signal, SA_RESTART);
        long bad = spin_with_signals(spin_calls);
        printf("spin: %d handlers, %ld wrong in loops, %ld wrong in handlers\n", atomic_load(&handled), bad,
               atomic_load(&handler_bad));
    } else {
        fprintf(stderr, "usage: ring_varsite calls|restart|restart_patched|resume|spin\n");
        return 2;
    }
    return 0;
}
