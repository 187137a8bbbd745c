// Queued signals: sigqueue and pthread_sigqueue deliver si_code SI_QUEUE and si_value to an
// SA_SIGINFO handler and to sigwaitinfo/sigtimedwait; real-time signals queue (every instance,
// in order, each with its value; lower numbers first), standard ones merge; rt_sigqueueinfo's
// permission rule (a forged si_code is refused for another process, allowed for oneself).
// `sig_queue CASE`; one line per check, nothing depends on timing.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "handler.h"

#define MAXSEEN 64
static volatile int seen, seen_sig[MAXSEEN], seen_code[MAXSEEN], seen_value[MAXSEEN], seen_pid_ok[MAXSEEN];
static volatile pid_t seen_tid[MAXSEEN];

static void on_sig(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    if (seen < MAXSEEN) {
        seen_sig[seen] = sig;
        seen_code[seen] = si->si_code;
        seen_value[seen] = si->si_value.sival_int;
        seen_pid_ok[seen] = si->si_pid == getpid() && si->si_uid == getuid();
        seen_tid[seen] = gettid();
        seen++;
    }
}

static void install(int sig) { set_info_handler(sig, on_sig, 0); }

static void block(sigset_t *set, int a, int b, int c) {
    sigemptyset(set);
    sigaddset(set, a);
    if (b)
        sigaddset(set, b);
    if (c)
        sigaddset(set, c);
    sigprocmask(SIG_BLOCK, set, NULL);
}

static void print_seen(void) {
    for (int i = 0; i < seen; i++)
        printf("  got %s%d code=%d value=%d sender_ok=%d\n", seen_sig[i] >= SIGRTMIN ? "SIGRTMIN+" : "sig ",
               seen_sig[i] >= SIGRTMIN ? seen_sig[i] - SIGRTMIN : seen_sig[i], seen_code[i], seen_value[i],
               seen_pid_ok[i]);
}

static long queueinfo(pid_t pid, int sig, int code, int value) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = sig;
    si.si_code = code;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_int = value;
    long r = syscall(SYS_rt_sigqueueinfo, pid, sig, &si);
    return r == 0 ? 0 : -errno;
}

static volatile pid_t worker_tid;

static void *worker(void *arg) {
    (void)arg;
    worker_tid = gettid();
    suspend_until(&seen);
    return NULL;
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "handler";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(c, "handler")) {
        // One sigqueue to an unblocked handler: delivered before sigqueue returns.
        install(SIGUSR1);
        union sigval v = {.sival_int = 1234};
        int r = sigqueue(getpid(), SIGUSR1, v);
        printf("sigqueue=%d seen=%d si_code_is_SI_QUEUE=%d\n", r, seen, seen_code[0] == SI_QUEUE);
        print_seen();
        // sival_ptr travels whole (64 bits).
        siginfo_t si;
        sigset_t set;
        block(&set, SIGUSR2, 0, 0);
        union sigval p = {.sival_ptr = (void *)0x123456789abcdef0ul};
        sigqueue(getpid(), SIGUSR2, p);
        int got = sigwaitinfo(&set, &si);
        printf("sigwaitinfo=%d ptr_ok=%d code_ok=%d\n", got == SIGUSR2, si.si_value.sival_ptr == p.sival_ptr,
               si.si_code == SI_QUEUE);
    } else if (!strcmp(c, "rt_order")) {
        // Blocked, several instances of two real-time signals and one standard signal queued
        // twice; unblocked, the handler sees the standard signal once and every real-time
        // instance, lower signal first, each signal's instances in the order sent.
        int lo = SIGRTMIN + 1, hi = SIGRTMIN + 3;
        install(lo);
        install(hi);
        install(SIGUSR1);
        sigset_t set;
        block(&set, lo, hi, SIGUSR1);
        for (int i = 0; i < 3; i++) {
            sigqueue(getpid(), hi, (union sigval){.sival_int = 30 + i});
            sigqueue(getpid(), lo, (union sigval){.sival_int = 10 + i});
        }
        sigqueue(getpid(), SIGUSR1, (union sigval){.sival_int = 1});
        sigqueue(getpid(), SIGUSR1, (union sigval){.sival_int = 2});
        kill(getpid(), lo); // kill queues a real-time signal too (SI_USER)
        sigset_t pend;
        sigpending(&pend);
        printf("pending lo=%d hi=%d usr1=%d\n", sigismember(&pend, lo), sigismember(&pend, hi),
               sigismember(&pend, SIGUSR1));
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        printf("delivered %d\n", seen);
        print_seen();
        sigpending(&pend);
        printf("pending after lo=%d hi=%d\n", sigismember(&pend, lo), sigismember(&pend, hi));
    } else if (!strcmp(c, "timedwait")) {
        // sigtimedwait takes the queued instances one by one with their values.
        int s = SIGRTMIN + 2;
        sigset_t set;
        block(&set, s, 0, 0);
        for (int i = 0; i < 4; i++)
            sigqueue(getpid(), s, (union sigval){.sival_int = 100 + i});
        struct timespec zero = {0, 0};
        for (int i = 0; i < 5; i++) {
            siginfo_t si;
            memset(&si, 0, sizeof si);
            int r = sigtimedwait(&set, &si, &zero);
            if (r < 0)
                printf("wait %d: %s\n", i, errno == EAGAIN ? "EAGAIN" : "other error");
            else
                printf("wait %d: SIGRTMIN+%d code=%d value=%d\n", i, r - SIGRTMIN, si.si_code,
                       si.si_value.sival_int);
        }
    } else if (!strcmp(c, "thread")) {
        // pthread_sigqueue reaches the named thread with its value.
        int s = SIGRTMIN + 4;
        install(s);
        sigset_t set;
        block(&set, s, 0, 0); // only the worker (which unblocks it in sigsuspend) takes it
        pthread_t th;
        pthread_create(&th, NULL, worker, NULL);
        while (worker_tid == 0)
            sched_yield();
        int r = pthread_sigqueue(th, s, (union sigval){.sival_int = 77});
        pthread_join(th, NULL);
        printf("pthread_sigqueue=%d on_worker=%d code_is_SI_QUEUE=%d value=%d\n", r, seen_tid[0] == worker_tid,
               seen_code[0] == SI_QUEUE, seen_value[0]);
    } else if (!strcmp(c, "perm")) {
        // To another process (the parent), a forged si_code >= 0 or SI_TKILL is refused before
        // anything is sent; to oneself any si_code goes through and arrives as given.
        install(SIGUSR1);
        pid_t parent = getppid();
        printf("to parent SI_USER: %s\n", queueinfo(parent, SIGUSR1, SI_USER, 0) == -EPERM ? "EPERM" : "other");
        printf("to parent SI_KERNEL: %s\n", queueinfo(parent, SIGUSR1, SI_KERNEL, 0) == -EPERM ? "EPERM" : "other");
        printf("to parent SI_TKILL: %s\n", queueinfo(parent, SIGUSR1, SI_TKILL, 0) == -EPERM ? "EPERM" : "other");
        printf("to self SI_USER: %ld\n", queueinfo(getpid(), SIGUSR1, SI_USER, 5));
        printf("to self SI_KERNEL: %ld\n", queueinfo(getpid(), SIGUSR1, SI_KERNEL, 6));
        printf("to self SI_QUEUE: %ld\n", queueinfo(getpid(), SIGUSR1, SI_QUEUE, 7));
        printf("bad signal: %s\n", queueinfo(getpid(), 65, SI_QUEUE, 0) == -EINVAL ? "EINVAL" : "other");
        printf("no such process: %s\n", queueinfo(-5, SIGUSR1, SI_QUEUE, 0) == -ESRCH ? "ESRCH" : "other");
        printf("signal 0: %ld\n", queueinfo(getpid(), 0, SI_QUEUE, 0));
        siginfo_t si;
        memset(&si, 0, sizeof si);
        si.si_code = SI_QUEUE;
        printf("tgsigqueueinfo bad tid: %s\n",
               syscall(SYS_rt_tgsigqueueinfo, getpid(), 0, SIGUSR1, &si) < 0 && errno == EINVAL ? "EINVAL" : "other");
        printf("tgsigqueueinfo to parent SI_USER: %s\n",
               (si.si_code = SI_USER, syscall(SYS_rt_tgsigqueueinfo, parent, parent, SIGUSR1, &si)) < 0 && errno == EPERM
                   ? "EPERM"
                   : "other");
        printf("bad address: %s\n",
               syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR1, (void *)8) < 0 && errno == EFAULT ? "EFAULT" : "other");
        print_seen();
    } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    return 0;
}
