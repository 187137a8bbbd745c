/* Variable-number system-call sites (issue 14): a `syscall` whose number is in a register
 * nobody can prove constant (an argument here, as in libgomp's futex calls and in syscall()
 * wrappers), after a window of register loads that the kernel rewrites into a call to a slot
 * replaying them. What must not change:
 *   calls     getppid, gettid and getpid through five site shapes (windows of 5, 6, 7 and 8
 *             bytes: a register move, an lea, two moves, a load of a global; a loop whose
 *             branch lands on the window's first instruction), different numbers through the
 *             same site, from two threads at once while the sites get rewritten
 *   restart   a thread blocks in read() through the two-move site, then the global-load site,
 *             while a SA_RESTART handler interrupts it and zeroes what the window loads the
 *             length from (the register in the frame, the global): Linux makes the `syscall`
 *             again with the length already loaded, so each read returns its byte
 *   resume    a handler sends the thread into a rewritten window (the middle of the two moves,
 *             then the global-load site's `syscall`) with the registers the old code had
 *             there: it must make the call and go on
 *   spin      three threads spin on variable sites while the main thread sends them signals
 *             whose handler makes the same calls: no result is wrong, every signal is handled
 * Prints the same lines natively and under hrt. */
#define _GNU_SOURCE
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
        ".size var_loop, .-var_loop\n");
long var_call(long nr, long a, long b, long c);
long var_lea(long nr, long a);
long var_pair(long nr, long a, long b, long c);
long var_global(long nr, long a, long b);
long var_loop(long nr, long n, long expected);
int var_len = 1;

/* Offsets into var_pair (its second window instruction, `mov %ecx, %edx`, and its `syscall`)
 * and var_global (its `syscall`), checked against the bytes before any call. */
enum { PAIR_SECOND = 12, PAIR_SYSCALL = 14, GLOBAL_SYSCALL = 15 };

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

static void on_signal(int sig) {
    (void)sig;
    check_in_handler();
}

/* Reads below ROUNDS go through var_pair (the length from rcx), the others through var_global
 * (the length from var_len). */
static long read_byte(int r, int fd, char *c) {
    var_len = 1;
    return r < ROUNDS ? var_pair(SYS_read, fd, (long)c, 1) : var_global(SYS_read, fd, (long)c);
}

static long spin_calls(long ppid) {
    return var_loop(SYS_getppid, 100, ppid) + (var_global(SYS_getppid, 0, 0) != ppid);
}

static long pair_getpid(void) { return var_pair(SYS_getpid, 0, 0, 0); }
static long global_getpid(void) { return var_global(SYS_getpid, 0, 0); }

/* The offsets above point at the instructions they name (checked before any call). */
static int offsets_hold(void) {
    const unsigned char *pair = (const unsigned char *)(long)var_pair, *global = (const unsigned char *)(long)var_global;
    return pair[PAIR_SECOND] == 0x89 && pair[PAIR_SECOND + 1] == 0xca && pair[PAIR_SYSCALL] == 0x0f &&
           pair[PAIR_SYSCALL + 1] == 0x05 && global[GLOBAL_SYSCALL] == 0x0f && global[GLOBAL_SYSCALL + 1] == 0x05;
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!offsets_hold()) {
        fprintf(stderr, "ring_varsite: the offsets do not match the code\n");
        return 3;
    }
    if (!strcmp(c, "calls")) {
        printf("calls: %d x 10 per thread, %ld wrong\n", CALLS, on_two_threads(calls));
    } else if (!strcmp(c, "restart")) {
        set_info_handler(SIGUSR1, zero_the_length, SA_RESTART);
        if (restart_reads(read_byte))
            return 1;
        printf("restart: %d handlers, %ld wrong in handlers\n", atomic_load(&handled), atomic_load(&handler_bad));
    } else if (!strcmp(c, "resume")) {
        install_resume();
        long wrong = resume_rounds(pair_getpid, (long)var_pair + PAIR_SECOND, SYS_getpid);
        printf("resume inside the window: %d rounds, %ld wrong\n", ROUNDS, wrong);
        wrong = resume_rounds(global_getpid, (long)var_global + GLOBAL_SYSCALL, 0);
        printf("resume at the syscall: %d rounds, %ld wrong\n", ROUNDS, wrong);
    } else if (!strcmp(c, "spin")) {
        set_handler(SIGUSR1, on_signal, SA_RESTART);
        long bad = spin_with_signals(spin_calls);
        printf("spin: %d handlers, %ld wrong in loops, %ld wrong in handlers\n", atomic_load(&handled), bad,
               atomic_load(&handler_bad));
    } else {
        fprintf(stderr, "usage: ring_varsite calls|restart|resume|spin\n");
        return 2;
    }
    return 0;
}
