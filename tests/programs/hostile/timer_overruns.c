/* POSIX timer overruns as on Linux. (1) A 1 ms periodic timer whose signal stays blocked for
 * ~100 ms: one signal, whose si_overrun (and timer_getoverrun) counts the other expiries of
 * that time; hrt gave overrun 0. (2) A 100 ms periodic timer armed with TIMER_ABSTIME 0.95 s
 * in the past: it fires at once with the 9 intervals missed as overruns (more if the host
 * delays the signal); hrt reported 0.
 * (3) Re-arming resets timer_getoverrun to 0. (4) Disarming drops the timer's pending
 * signal, as recent Linux does (6.18, the test host's; older kernels delivered it, as hrt
 * did). On CLOCK_MONOTONIC and CLOCK_REALTIME. Prints what it checks, the same natively. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static volatile int signals, overrun, first_getoverrun;
static timer_t timer;

/* Keeps the first signal's si_overrun and timer_getoverrun (taken at once: a later signal of
 * the periodic timer has its own). */
static void on_timer(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)uc;
    if (signals++ == 0) {
        overrun = si->si_overrun;
        first_getoverrun = timer_getoverrun(timer);
    }
}

static long long ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void wait_for_signal(void) {
    for (int i = 0; i < 2000 && !signals; i++) {
        struct timespec r = {0, 1000000};
        nanosleep(&r, NULL);
    }
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_timer;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGRTMIN, &sa, NULL);
    sigset_t rt;
    sigemptyset(&rt);
    sigaddset(&rt, SIGRTMIN);
    const clockid_t clocks[] = {CLOCK_MONOTONIC, CLOCK_REALTIME};
    const char *names[] = {"monotonic", "realtime"};
    for (int k = 0; k < 2; k++) {
        timer_t t;
        struct sigevent se;
        memset(&se, 0, sizeof se);
        se.sigev_notify = SIGEV_SIGNAL;
        se.sigev_signo = SIGRTMIN;
        if (timer_create(clocks[k], &se, &t) != 0)
            return 1;
        timer = t;
        struct itimerspec off = {{0, 0}, {0, 0}};

        /* (1) expiries while the signal is blocked, then taken with sigwaitinfo */
        sigprocmask(SIG_BLOCK, &rt, NULL);
        struct itimerspec every_ms = {{0, 1000000}, {0, 1000000}};
        long long t0 = ns(clocks[k]);
        timer_settime(t, 0, &every_ms, NULL);
        /* The timer started between t0 and t1: a delay there (a loaded host) would make
         * expiries counted from t0 more than the timer's. */
        long long t1 = ns(clocks[k]);
        struct timespec r = {0, 100000000};
        nanosleep(&r, NULL);
        /* The signal's overrun is counted when it is taken, somewhere between these two
         * readings of the clock: the check holds however long a loaded host keeps the
         * program from running between them. */
        long long expiries = (ns(clocks[k]) - t1) / 1000000;
        siginfo_t si;
        int taken = sigwaitinfo(&rt, &si) == SIGRTMIN;
        long long expiries_after = (ns(clocks[k]) - t0) / 1000000;
        int got = timer_getoverrun(t);
        r.tv_nsec = 5000000; /* the next expiry's signal pending */
        nanosleep(&r, NULL);
        timer_settime(t, 0, &off, NULL);
        long long slack = expiries / 10 > 3 ? expiries / 10 : 3;
        int counted = si.si_overrun >= expiries - 1 - slack && si.si_overrun <= expiries_after;
        printf("%s blocked: signal taken %d, si_overrun counts the other expiries: %d, timer_getoverrun the "
               "same: %d\n",
               names[k], taken, counted, got == si.si_overrun);
        /* (4) the disarmed timer's pending signal is dropped (recent Linux; older kernels
         * delivered it) */
        signals = 0;
        sigprocmask(SIG_UNBLOCK, &rt, NULL);
        printf("%s disarmed: pending signal delivered %d\n", names[k], signals);

        /* (2) an absolute start already past */
        signals = 0;
        overrun = first_getoverrun = -1;
        struct itimerspec past = {{0, 100000000}, {0, 0}};
        long long start = ns(clocks[k]) - 950000000LL;
        past.it_value.tv_sec = start / 1000000000LL;
        past.it_value.tv_nsec = start % 1000000000LL;
        timer_settime(t, TIMER_ABSTIME, &past, NULL);
        wait_for_signal();
        /* 9 intervals had passed at timer_settime; more may have by the time the signal is
         * taken (a loaded host), and Linux counts those too. */
        long long missed_by_now = (ns(clocks[k]) - start) / 100000000LL;
        timer_settime(t, 0, &off, NULL);
        got = first_getoverrun;
        printf("%s past start: signal %d, si_overrun counts the missed intervals: %d, timer_getoverrun the same: %d\n",
               names[k], signals > 0, overrun >= 9 && overrun <= missed_by_now, got == overrun);

        /* (3) re-armed: no overrun yet */
        struct itimerspec later = {{0, 0}, {10, 0}};
        timer_settime(t, 0, &later, NULL);
        printf("%s re-armed: timer_getoverrun %d\n", names[k], timer_getoverrun(t));
        timer_delete(t);
    }
    return 0;
}
