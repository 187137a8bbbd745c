/* Register system-call sites (`mov %rX, %eax; syscall`, the number hoisted into a register as
 * libgomp's futex calls have it) and the generic syscall() function's site (`mov 0x8(%rsp),
 * %r9; syscall`, the number an argument) rewritten into calls (issue 14): what must not change.
 *   calls     getppid and gettid through register sites (r9d and r10 forms) and through
 *             syscall() from two threads at once, while the sites get rewritten: every result
 *             must be right
 *   restart   a thread blocks in read() through a register site, then through syscall(), while
 *             a SA_RESTART handler interrupts it, three times each: each read restarts and
 *             returns the byte written after the handler ran (the first read of each kind is
 *             the one whose site gets rewritten while it blocks)
 *   resume    a handler sends the thread back to the `syscall` of a register site, then of
 *             syscall(), that has run (so is rewritten: the `syscall` is now the middle of a
 *             call) with rax the number, as a debugger or a user-level scheduler may: it must
 *             make the call and go on (the kernel moves such a rip back to the call)
 *   spin      three threads spin on a register-site getppid and syscall(SYS_getppid) while the
 *             main thread sends them signals whose handler makes the same calls: no result is
 *             wrong, every signal is handled (threads interrupted between the mov and the
 *             syscall when the site is patched must resume as if nothing happened)
 *   busy      three getppid calls through a register site while another thread computes
 *             (its vCPU busy: the patch waits, so `-v` counts no register site), then with
 *             `busy idle` three more once that thread has ended (then it is patched)
 *   generic   syscall() with six arguments that must all arrive (mmap of a file at an offset,
 *             at a fixed address), an errno return (EINVAL for an unaligned offset: the sixth
 *             argument), futex wait and wake between two threads, and seven getppid calls
 *             (`--strace` must show all seven)
 * Prints the same lines natively and under hrt. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "ring_sites.h"

__asm__(".text\n"
        ".globl reg_getppid\n.type reg_getppid,@function\nreg_getppid:\n"
        "  mov $110, %r9d\n"
        "  mov %r9d, %eax\n"
        "  syscall\n"
        "  ret\n"
        ".size reg_getppid, .-reg_getppid\n"
        ".globl reg_gettid\n.type reg_gettid,@function\nreg_gettid:\n"
        "  mov $186, %r10\n"
        "  mov %r10, %rax\n"
        "  syscall\n"
        "  ret\n"
        ".size reg_gettid, .-reg_gettid\n"
        /* read(fd, buf, len) */
        ".globl reg_read\n.type reg_read,@function\nreg_read:\n"
        "  xor %r8d, %r8d\n"
        "  mov %r8d, %eax\n"
        "  syscall\n"
        "  ret\n"
        ".size reg_read, .-reg_read\n"
        /* getpid; the syscall is 9 bytes in (6-byte mov, 3-byte mov). */
        ".globl reg_getpid\n.type reg_getpid,@function\nreg_getpid:\n"
        "  mov $39, %r9d\n"
        "  mov %r9d, %eax\n"
        "  syscall\n"
        "  ret\n"
        ".size reg_getpid, .-reg_getpid\n"
        /* A hot loop: n getppid calls through one site; returns how many were wrong. */
        ".globl reg_getppid_loop\n.type reg_getppid_loop,@function\nreg_getppid_loop:\n"
        "  mov $110, %r8d\n"
        "  xor %ecx, %ecx\n"
        "  xor %edx, %edx\n"
        "1:\n"
        "  mov %r8d, %eax\n"
        "  syscall\n"
        "  cmp %rax, %rsi\n"
        "  setne %al\n"
        "  movzbl %al, %eax\n"
        "  add %rax, %rdx\n"
        "  dec %rdi\n"
        "  jnz 1b\n"
        "  mov %rdx, %rax\n"
        "  ret\n"
        ".size reg_getppid_loop, .-reg_getppid_loop\n");
long reg_getppid(void);
long reg_gettid(void);
long reg_read(long fd, void *buf, long len);
long reg_getppid_loop(long n, long expected);
long reg_getpid(void);
enum { GETPID_SYSCALL_OFFSET = 9 };

enum { CALLS = 20000 };

/* The calls case's thread; returns how many results were wrong. */
static long calls(void) {
    long bad = 0, ppid = getppid(), tid = syscall(SYS_gettid);
    for (int i = 0; i < CALLS; i++) {
        bad += reg_getppid() != ppid;
        bad += reg_gettid() != tid;
        bad += syscall(SYS_getppid) != ppid;
        bad += syscall(SYS_gettid) != tid;
    }
    return bad;
}

static atomic_long handler_bad;
static void on_signal(int sig) {
    (void)sig;
    if (reg_getppid() != getppid() || syscall(SYS_getppid) != getppid())
        atomic_fetch_add(&handler_bad, 1);
    atomic_fetch_add(&handled, 1);
}

/* Reads below ROUNDS go through the register site, the others through syscall(). */
static long read_byte(int r, int fd, char *c) {
    return r < ROUNDS ? reg_read(fd, c, 1) : syscall(SYS_read, fd, c, 1);
}

static long spin_calls(long ppid) {
    return reg_getppid_loop(100, ppid) + (syscall(SYS_getppid) != ppid);
}

/* The address of the `syscall` in the C library's syscall() function, found by its bytes
 * (`mov 0x8(%rsp), %r9; syscall`) before any call could rewrite them; 0 if not there. */
static long generic_syscall_address(void) {
    static const unsigned char pattern[] = {0x4c, 0x8b, 0x4c, 0x24, 0x08, 0x0f, 0x05};
    const unsigned char *code = (const unsigned char *)(long)syscall;
    for (int i = 0; i < 64; i++)
        if (!memcmp(code + i, pattern, sizeof pattern))
            return (long)(code + i + 5);
    return 0;
}

static long generic_getpid(void) { return syscall(SYS_getpid); }

static atomic_int futex_word, nobody_waits;

/* Waits until futex_word is 1 (a wake that does not arrive leaves it waiting, and the test
 * times out). */
static void *futex_waiter(void *arg) {
    (void)arg;
    while (atomic_load(&futex_word) == 0)
        syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    return NULL;
}

static atomic_int computing, stop_computing;

/* Computes (no system call) until told to stop. */
static void *computer(void *arg) {
    (void)arg;
    atomic_store(&computing, 1);
    while (!atomic_load(&stop_computing))
        ;
    return NULL;
}

/* The `busy` case: `idle` adds the calls after the computing thread has ended. */
static int busy(int idle) {
    long ppid = getppid(), wrong = 0;
    pthread_t t;
    pthread_create(&t, NULL, computer, NULL);
    while (!atomic_load(&computing))
        ;
    for (int i = 0; i < 3; i++)
        wrong += reg_getppid() != ppid;
    atomic_store(&stop_computing, 1);
    pthread_join(t, NULL);
    for (int i = 0; idle && i < 3; i++)
        wrong += reg_getppid() != ppid;
    printf("busy: %d calls, %ld wrong\n", idle ? 6 : 3, wrong);
    return 0;
}

/* The `generic` case; returns the exit status. */
static int generic(void) {
    long page = sysconf(_SC_PAGESIZE);
    FILE *f = tmpfile();
    if (!f)
        return 1;
    for (int p = 0; p < 3; p++)
        for (long i = 0; i < page; i++)
            fputc('a' + p, f);
    fflush(f);
    /* Twice: the first call through syscall() may be the SYSCALL that gets its site rewritten,
     * the second goes through the call. A free address to map at (MAP_FIXED: the first
     * argument must arrive), page 1 + round of the file (the sixth argument). */
    for (int round = 0; round < 2; round++) {
        char *hint = mmap(NULL, 4 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        munmap(hint, 4 * page);
        char *at = (char *)syscall(SYS_mmap, hint + page, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
                                   fileno(f), (1 + round) * page);
        int mapped = at != MAP_FAILED;
        printf("mmap %d: at the hint: %d, file page %c\n", round, at == hint + page,
               mapped && at[0] == at[page - 1] ? at[0] : '?');
        if (mapped) {
            at[0] = 'z'; /* PROT_WRITE arrived */
            munmap(at, 2 * page);
        }
    }
    errno = 0;
    long bad = syscall(SYS_mmap, NULL, page, PROT_READ, MAP_PRIVATE, fileno(f), 1L);
    printf("mmap at an unaligned offset: %ld, errno %s\n", bad, errno == EINVAL ? "EINVAL" : strerror(errno));
    errno = 0;
    bad = syscall(SYS_close, -1);
    printf("close(-1): %ld, errno %s\n", bad, errno == EBADF ? "EBADF" : strerror(errno));
    pthread_t t;
    pthread_create(&t, NULL, futex_waiter, NULL);
    pause_ms(20);
    atomic_store(&futex_word, 1);
    /* Woken at its wait, or it never waited: either way it ends. */
    for (;;) {
        syscall(SYS_futex, &futex_word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
        if (!pthread_tryjoin_np(t, NULL))
            break;
        pause_ms(1);
    }
    printf("futex: the waiter was woken; a wake with no waiter wakes %ld\n",
           syscall(SYS_futex, &nobody_waits, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0));
    long ppid = getppid(), wrong = 0;
    for (int i = 0; i < 7; i++)
        wrong += syscall(SYS_getppid) != ppid;
    printf("getppid through syscall(): 7 calls, %ld wrong\n", wrong);
    return 0;
}

int main(int argc, char **argv) {
    warm_up_rewriting();
    const char *c = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(c, "calls")) {
        printf("calls: %d x 4 per thread, %ld wrong\n", CALLS, on_two_threads(calls));
    } else if (!strcmp(c, "restart")) {
        set_handler(SIGUSR1, on_signal, SA_RESTART);
        if (restart_reads(read_byte))
            return 1;
        printf("restart: %d handlers, %ld wrong in handlers\n", atomic_load(&handled), atomic_load(&handler_bad));
    } else if (!strcmp(c, "resume")) {
        install_resume();
        long generic_at = generic_syscall_address();
        long wrong = resume_rounds(reg_getpid, (long)reg_getpid + GETPID_SYSCALL_OFFSET, 0);
        printf("resume: %d rounds, %ld wrong\n", ROUNDS, wrong);
        wrong = generic_at ? resume_rounds(generic_getpid, generic_at, 0) : -1;
        printf("resume in syscall(): %d rounds, %ld wrong\n", ROUNDS, wrong);
    } else if (!strcmp(c, "spin")) {
        set_handler(SIGUSR1, on_signal, SA_RESTART);
        long bad = spin_with_signals(spin_calls);
        printf("spin: %d handlers, %ld wrong in loops, %ld wrong in handlers\n", atomic_load(&handled), bad,
               atomic_load(&handler_bad));
    } else if (!strcmp(c, "generic")) {
        return generic();
    } else if (!strcmp(c, "busy")) {
        return busy(argc > 2 && !strcmp(argv[2], "idle"));
    } else {
        fprintf(stderr, "usage: ring_regsite calls|restart|resume|spin|generic|busy [idle]\n");
        return 2;
    }
    return 0;
}
