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
 *   generic   syscall() with six arguments that must all arrive (mmap of a file at an offset,
 *             at a fixed address), an errno return (EINVAL for an unaligned offset: the sixth
 *             argument), futex wait and wake between two threads, and seven getppid calls
 *             (`--strace` must show all seven)
 * Prints the same lines natively and under hrt. */
#define _GNU_SOURCE
#include <pthread.h>
#include <errno.h>
#include <linux/futex.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

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
        /* Where the resumed getpid returns: keeps rax, then leaves through resume_landing. */
        ".globl resume_trampoline\n.type resume_trampoline,@function\nresume_trampoline:\n"
        "  mov %rax, resumed_rax(%rip)\n"
        "  and $-16, %rsp\n"
        "  call resume_landing\n"
        "  ud2\n"
        ".size resume_trampoline, .-resume_trampoline\n"
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
void resume_trampoline(void);
enum { GETPID_SYSCALL_OFFSET = 9 };

enum { CALLS = 20000, ROUNDS = 3, SPINNERS = 3, SIGNALS = 30 };

static long bad_calls;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *caller(void *arg) {
    (void)arg;
    long bad = 0, ppid = getppid(), tid = syscall(SYS_gettid);
    for (int i = 0; i < CALLS; i++) {
        bad += reg_getppid() != ppid;
        bad += reg_gettid() != tid;
        bad += syscall(SYS_getppid) != ppid;
        bad += syscall(SYS_gettid) != tid;
    }
    pthread_mutex_lock(&lock);
    bad_calls += bad;
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void pause_ms(long ms) {
    struct timespec ts = {0, ms * 1000000};
    nanosleep(&ts, NULL);
}

static atomic_int handled;
static atomic_long handler_bad;
static void on_signal(int sig) {
    (void)sig;
    if (reg_getppid() != getppid() || syscall(SYS_getppid) != getppid())
        atomic_fetch_add(&handler_bad, 1);
    atomic_fetch_add(&handled, 1);
}

static int pipe_fds[2];
static atomic_int reading;

/* Rounds below ROUNDS read through the register site, the others through syscall(). */
static void *reader(void *arg) {
    (void)arg;
    for (int r = 0; r < 2 * ROUNDS; r++) {
        char c = 0;
        atomic_store(&reading, r + 1);
        long got = r < ROUNDS ? reg_read(pipe_fds[0], &c, 1) : syscall(SYS_read, pipe_fds[0], &c, 1);
        printf("read %d: %ld '%c'\n", r, got, c);
    }
    return NULL;
}

static atomic_int stop;
static long spin_bad[SPINNERS];

static void *spinner(void *arg) {
    long i = (long)arg, ppid = getppid();
    while (!atomic_load(&stop)) {
        spin_bad[i] += reg_getppid_loop(100, ppid);
        spin_bad[i] += syscall(SYS_getppid) != ppid;
    }
    return NULL;
}

long resumed_rax;
static sigjmp_buf resume_env;
static unsigned long resume_stack[2048] __attribute__((aligned(16)));

void resume_landing(void) {
    siglongjmp(resume_env, 1);
}

/* Where send_to_syscall resumes: a `syscall` that returns (with rax = getpid) to its caller. */
static long resume_at;

/* Resumes at resume_at with rax = 39 and a return address to resume_trampoline. */
static void send_to_syscall(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)si;
    ucontext_t *uc = ctx;
    unsigned long *top = &resume_stack[2048 - 2];
    *top = (unsigned long)resume_trampoline;
    uc->uc_mcontext.gregs[REG_RSP] = (long)top;
    uc->uc_mcontext.gregs[REG_RAX] = 39;
    uc->uc_mcontext.gregs[REG_RIP] = resume_at;
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

/* Rounds of a direct call through `call` (which rewrites its site the first time), then a
 * handler's resumption at `at`; returns how many results were wrong. */
static long resume_rounds(long (*call)(void), long at) {
    long pid = getpid();
    volatile long wrong = 0;
    resume_at = at;
    for (int r = 0; r < ROUNDS; r++) {
        wrong += call() != pid;
        resumed_rax = 0;
        if (!sigsetjmp(resume_env, 1))
            raise(SIGUSR2);
        wrong += resumed_rax != pid;
    }
    return wrong;
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

static void install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(c, "calls")) {
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, caller, NULL);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        printf("calls: %d x 4 per thread, %ld wrong\n", CALLS, bad_calls);
    } else if (!strcmp(c, "restart")) {
        install();
        if (pipe(pipe_fds))
            return 1;
        pthread_t t;
        pthread_create(&t, NULL, reader, NULL);
        for (int r = 0; r < 2 * ROUNDS; r++) {
            while (atomic_load(&reading) != r + 1)
                pause_ms(1);
            pause_ms(20); /* most likely blocked in read by now (either way the output is the same) */
            int before = atomic_load(&handled);
            pthread_kill(t, SIGUSR1);
            while (atomic_load(&handled) == before)
                pause_ms(1);
            char byte = 'a' + r;
            if (write(pipe_fds[1], &byte, 1) != 1)
                return 1;
        }
        pthread_join(t, NULL);
        printf("restart: %d handlers, %ld wrong in handlers\n", atomic_load(&handled), atomic_load(&handler_bad));
    } else if (!strcmp(c, "resume")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = send_to_syscall;
        sa.sa_flags = SA_SIGINFO;
        sigaction(SIGUSR2, &sa, NULL);
        long generic_at = generic_syscall_address();
        long wrong = resume_rounds(reg_getpid, (long)reg_getpid + GETPID_SYSCALL_OFFSET);
        printf("resume: %d rounds, %ld wrong\n", ROUNDS, wrong);
        wrong = generic_at ? resume_rounds(generic_getpid, generic_at) : -1;
        printf("resume in syscall(): %d rounds, %ld wrong\n", ROUNDS, wrong);
    } else if (!strcmp(c, "spin")) {
        install();
        pthread_t t[SPINNERS];
        for (long i = 0; i < SPINNERS; i++)
            pthread_create(&t[i], NULL, spinner, (void *)i);
        for (int s = 0; s < SIGNALS; s++) {
            int before = atomic_load(&handled);
            pthread_kill(t[s % SPINNERS], SIGUSR1);
            while (atomic_load(&handled) == before)
                sched_yield();
        }
        atomic_store(&stop, 1);
        long bad = 0;
        for (int i = 0; i < SPINNERS; i++) {
            pthread_join(t[i], NULL);
            bad += spin_bad[i];
        }
        printf("spin: %d handlers, %ld wrong in loops, %ld wrong in handlers\n", atomic_load(&handled), bad,
               atomic_load(&handler_bad));
    } else if (!strcmp(c, "generic")) {
        return generic();
    } else {
        fprintf(stderr, "usage: ring_regsite calls|restart|resume|spin|generic\n");
        return 2;
    }
    return 0;
}
