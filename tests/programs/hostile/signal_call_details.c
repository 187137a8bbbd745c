// Details of the signal calls as Linux has them (each was different under hrt):
// - rt_sigprocmask with an unknown `how` fails before it writes the old mask;
// - sigaction drops flags Linux does not know (an unknown bit, SA_UNSUPPORTED, and the upper
//   half glibc's sign-extended SA_RESETHAND brings) from what it keeps and reports;
// - an SS_AUTODISARM alternate stack is disarmed while any handler runs, also one without
//   SA_ONSTACK, and is back after it;
// - rt_sigqueueinfo and rt_tgsigqueueinfo with a kill-like si_code from a thread other than
//   the main one: EPERM (Linux compares with the caller's thread id);
// - 5,000 sigqueue and 3,000 kill of blocked real-time signals are all queued and taken (the
//   kernel held 4,096).
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31)
#endif

static char alt[65536];

static void report_alt(int sig) {
    (void)sig;
    stack_t o;
    sigaltstack(0, &o);
    printf("in the handler: flags %#x size %zu\n", (unsigned)o.ss_flags, o.ss_size);
}

static void nothing(int sig) { (void)sig; }

struct kernel_sigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    unsigned long mask;
};

static void *queue_from_a_thread(void *arg) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = SIGUSR2;
    si.si_code = SI_USER;
    errno = 0;
    long r = syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR2, &si);
    printf("rt_sigqueueinfo from a thread %ld %s\n", r, r ? strerror(errno) : "");
    errno = 0;
    r = syscall(SYS_rt_tgsigqueueinfo, getpid(), getpid(), SIGUSR2, &si);
    printf("rt_tgsigqueueinfo from a thread %ld %s\n", r, r ? strerror(errno) : "");
    si.si_code = SI_QUEUE;
    r = syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR2, &si);
    printf("rt_sigqueueinfo SI_QUEUE from a thread %ld\n", r);
    return arg;
}

int main(void) {
    uint64_t set = 1 << 9, old = 0xaaaaaaaaaaaaaaaaULL;
    errno = 0;
    long r = syscall(SYS_rt_sigprocmask, 100, &set, &old, 8);
    printf("rt_sigprocmask how 100: %ld %s old %#llx\n", r, strerror(errno), (unsigned long long)old);

    struct sigaction a, o;
    memset(&a, 0, sizeof a);
    a.sa_handler = nothing;
    a.sa_flags = SA_RESTART | 0x400 | 0x100000;
    sigaction(SIGUSR1, &a, 0);
    sigaction(SIGUSR1, 0, &o);
    printf("flags set %#x, kept %#x\n", (unsigned)a.sa_flags, (unsigned)(o.sa_flags & ~0x04000000));
    memset(&a, 0, sizeof a);
    a.sa_handler = nothing;
    a.sa_flags = SA_RESETHAND;
    sigaction(SIGUSR2, &a, 0);
    struct kernel_sigaction k;
    syscall(SYS_rt_sigaction, SIGUSR2, 0, &k, 8);
    printf("SA_RESETHAND kept as %#lx\n", k.flags & ~0x04000000UL);

    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = SS_AUTODISARM};
    sigaltstack(&ss, 0);
    signal(SIGURG, report_alt);
    raise(SIGURG);
    stack_t after;
    sigaltstack(0, &after);
    printf("after the handler: flags %#x size %zu\n", (unsigned)after.ss_flags, after.ss_size);

    sigset_t m;
    sigemptyset(&m);
    sigaddset(&m, SIGUSR2);
    sigaddset(&m, 40);
    sigaddset(&m, 41);
    sigprocmask(SIG_BLOCK, &m, 0);
    pthread_t t;
    pthread_create(&t, 0, queue_from_a_thread, 0);
    pthread_join(t, 0);

    int queued = 0, refused = 0, killed = 0;
    for (int i = 0; i < 5000; i++) {
        union sigval v = {.sival_int = i};
        if (sigqueue(getpid(), 40, v) == 0)
            queued++;
        else
            refused++;
    }
    for (int i = 0; i < 3000; i++)
        killed += kill(getpid(), 41) == 0;
    siginfo_t si;
    struct timespec zero = {0, 0};
    int n40 = 0, n41 = 0, in_order = 1, s;
    while ((s = sigtimedwait(&m, &si, &zero)) > 0) {
        if (s == 40) {
            in_order &= si.si_value.sival_int == n40;
            n40++;
        } else if (s == 41) {
            n41++;
        }
    }
    printf("sigqueue %d queued %d refused, kill %d; taken %d of 40 (in order %d), %d of 41\n", queued, refused, killed,
           n40, in_order, n41);
    printf("signal call details: done\n");
    return 0;
}
