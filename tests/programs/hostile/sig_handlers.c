// Signal handlers: SA_SIGINFO contents, raise/kill, sigaltstack, SA_RESETHAND, SA_NODEFER,
// sa_mask, masks with sigpending and sigsuspend, FPU state across a handler, rt_sigtimedwait,
// and tgkill to another thread. Run as `sig_handlers CASE`; compared with Linux.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31)
#endif

static volatile int hits, depth, max_depth, code, same_pid, on_alt, usr2_seen_inside;
static volatile pid_t handler_tid;
static char *alt_base;
static size_t alt_size = 64 * 1024;

static void on_info(int sig, siginfo_t *si, void *uc_) {
    ucontext_t *uc = uc_;
    hits++;
    code = si->si_code;
    same_pid = si->si_pid == getpid();
    printf("handler sig=%d si_signo=%d si_code=%d pid_ok=%d uc_ok=%d\n", sig, si->si_signo, si->si_code, same_pid,
           uc != NULL && uc->uc_mcontext.gregs[REG_RSP] != 0);
}

static void install(int sig, void (*fn)(int, siginfo_t *, void *), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fn;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) != 0) {
        perror("sigaction");
        exit(1);
    }
}

static void on_alt_handler(int sig, siginfo_t *si, void *uc_) {
    char here;
    (void)si;
    (void)uc_;
    on_alt = &here >= alt_base && &here < alt_base + alt_size;
    stack_t now;
    sigaltstack(NULL, &now);
    printf("alt handler sig=%d on_alt=%d ss_flags=%#x\n", sig, on_alt, now.ss_flags);
}

static void on_nested(int sig, siginfo_t *si, void *uc) {
    (void)si;
    (void)uc;
    depth++;
    hits++;
    if (depth > max_depth)
        max_depth = depth;
    if (hits < 3)
        raise(sig);
    depth--;
}

static void on_usr2(int sig, siginfo_t *si, void *uc) {
    (void)si;
    (void)uc;
    (void)sig;
    usr2_seen_inside = depth;
}

static void on_usr1_raising_usr2(int sig, siginfo_t *si, void *uc) {
    (void)si;
    (void)uc;
    (void)sig;
    depth = 1;
    raise(SIGUSR2); // blocked by sa_mask: runs after this handler returns
    depth = 0;
}

static void on_fpu(int sig, siginfo_t *si, void *uc) {
    (void)si;
    (void)uc;
    (void)sig;
    volatile double x = 1.0;
    for (int i = 0; i < 100; i++)
        x = x * 3.0 + 0.5;
    hits = (int)(x > 1.0);
}

static void on_thread_sig(int sig, siginfo_t *si, void *uc) {
    (void)si;
    (void)uc;
    (void)sig;
    handler_tid = gettid();
}

static volatile pid_t worker_tid;
static void *worker(void *arg) {
    (void)arg;
    worker_tid = gettid();
    while (handler_tid == 0)
        sched_yield();
    return NULL;
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "siginfo";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(c, "siginfo")) {
        install(SIGUSR1, on_info, 0);
        raise(SIGUSR1);
        install(SIGUSR2, on_info, 0);
        kill(getpid(), SIGUSR2);
        printf("hits=%d\n", hits);
    } else if (!strcmp(c, "altstack")) {
        alt_base = malloc(alt_size);
        stack_t ss = {.ss_sp = alt_base, .ss_size = alt_size, .ss_flags = 0};
        if (sigaltstack(&ss, NULL) != 0)
            perror("sigaltstack");
        install(SIGUSR1, on_alt_handler, SA_ONSTACK);
        raise(SIGUSR1);
        install(SIGUSR2, on_alt_handler, 0);
        raise(SIGUSR2);
    } else if (!strcmp(c, "autodisarm")) {
        alt_base = malloc(alt_size);
        stack_t ss = {.ss_sp = alt_base, .ss_size = alt_size, .ss_flags = SS_AUTODISARM};
        if (sigaltstack(&ss, NULL) != 0)
            perror("sigaltstack");
        install(SIGUSR1, on_alt_handler, SA_ONSTACK);
        raise(SIGUSR1);
        stack_t after;
        sigaltstack(NULL, &after);
        printf("after: same stack=%d size_ok=%d flags=%#x\n", after.ss_sp == alt_base, after.ss_size == alt_size,
               after.ss_flags);
    } else if (!strcmp(c, "resethand")) {
        install(SIGUSR1, on_info, SA_RESETHAND);
        raise(SIGUSR1);
        printf("first raise handled, raising again\n");
        raise(SIGUSR1);
        printf("not reached\n");
    } else if (!strcmp(c, "nodefer")) {
        install(SIGUSR1, on_nested, SA_NODEFER);
        raise(SIGUSR1);
        printf("nodefer max_depth=%d\n", max_depth);
        max_depth = 0;
        hits = 0;
        install(SIGUSR2, on_nested, 0);
        raise(SIGUSR2); // the nested raise waits until the handler returns
        printf("defer max_depth=%d runs=%d\n", max_depth, hits);
    } else if (!strcmp(c, "samask")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_usr1_raising_usr2;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaddset(&sa.sa_mask, SIGUSR2);
        sigaction(SIGUSR1, &sa, NULL);
        install(SIGUSR2, on_usr2, 0);
        usr2_seen_inside = -1;
        raise(SIGUSR1);
        printf("usr2 ran inside usr1 handler=%d\n", usr2_seen_inside);
    } else if (!strcmp(c, "suspend")) {
        install(SIGUSR1, on_info, 0);
        sigset_t block, old, pend, now;
        sigemptyset(&block);
        sigaddset(&block, SIGUSR1);
        sigprocmask(SIG_BLOCK, &block, &old);
        raise(SIGUSR1);
        sigpending(&pend);
        printf("after raise: hits=%d pending=%d\n", hits, sigismember(&pend, SIGUSR1));
        sigset_t empty;
        sigemptyset(&empty);
        int r = sigsuspend(&empty);
        printf("sigsuspend=%d errno_eintr=%d hits=%d\n", r, errno == EINTR, hits);
        sigprocmask(SIG_SETMASK, NULL, &now);
        printf("mask restored=%d\n", sigismember(&now, SIGUSR1));
        sigpending(&pend);
        printf("pending now=%d\n", sigismember(&pend, SIGUSR1));
    } else if (!strcmp(c, "timedwait")) {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR2);
        sigprocmask(SIG_BLOCK, &set, NULL);
        struct timespec zero = {0, 0};
        int r = sigtimedwait(&set, NULL, &zero);
        printf("empty wait=%d eagain=%d\n", r, errno == EAGAIN);
        raise(SIGUSR2);
        siginfo_t si;
        r = sigtimedwait(&set, &si, &zero);
        printf("wait=%d si_signo=%d si_code=%d\n", r, si.si_signo, si.si_code);
    } else if (!strcmp(c, "sigwait_default")) {
        // A blocked signal whose default is to be ignored still waits for sigwait.
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGWINCH);
        sigprocmask(SIG_BLOCK, &set, NULL);
        raise(SIGWINCH);
        int got = 0;
        int r = sigwait(&set, &got);
        printf("sigwait=%d got=%d\n", r, got);
    } else if (!strcmp(c, "fpu")) {
        install(SIGUSR1, on_fpu, 0);
        volatile double a = 1.25, b = 0;
        for (int i = 0; i < 10; i++) {
            b = b + a * i;
            if (i == 5)
                raise(SIGUSR1);
        }
        printf("fpu b=%.3f hits=%d\n", b, hits);
    } else if (!strcmp(c, "tgkill")) {
        install(SIGUSR1, on_thread_sig, 0);
        pthread_t th;
        pthread_create(&th, NULL, worker, NULL);
        while (worker_tid == 0)
            sched_yield();
        syscall(SYS_tgkill, getpid(), worker_tid, SIGUSR1);
        pthread_join(th, NULL);
        printf("handled on the worker=%d\n", handler_tid == worker_tid);
        int r = (int)syscall(SYS_tgkill, getpid(), 999999, SIGUSR1);
        printf("tgkill to a missing thread=%d esrch=%d\n", r, errno == ESRCH);
    } else if (!strcmp(c, "default_fatal")) {
        printf("raising SIGTERM\n");
        raise(SIGTERM);
    } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    return 0;
}
