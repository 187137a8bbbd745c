// clock_nanosleep on CPU-time clocks: the program's (CLOCK_PROCESS_CPUTIME_ID and the id
// clock_getcpuclockid gives), relative and TIMER_ABSTIME, and another thread's clock, each
// while a second thread runs a fifth of the time (so its CPU clock runs slower than the wall
// clock, and a sleep of wall time would end early); a signal ends a sleep with EINTR and the CPU time left; and
// Linux's errors (EOPNOTSUPP for CLOCK_THREAD_CPUTIME_ID and the clocks it cannot sleep on,
// EINVAL for the caller's own thread clock, unknown clocks and bad times, EFAULT). Results are
// printed as yes/no or errno, never as times.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "report.h"

static atomic_int stop, interrupted_done;
static pthread_t main_thread;

static long long ns_of(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// Runs 1 ms of CPU time, then sleeps 4 ms, until told to stop.
static void *spinner(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        long long next = ns_of(CLOCK_THREAD_CPUTIME_ID) + 1000000;
        while (ns_of(CLOCK_THREAD_CPUTIME_ID) < next)
            ;
        nanosleep(&(struct timespec){0, 4000000}, NULL);
    }
    return NULL;
}

// Signals the main thread every 10 ms of its own CPU time until it reports the EINTR.
static void *nudger(void *arg) {
    (void)arg;
    while (!atomic_load(&interrupted_done)) {
        long long next = ns_of(CLOCK_THREAD_CPUTIME_ID) + 10000000;
        while (ns_of(CLOCK_THREAD_CPUTIME_ID) < next && !atomic_load(&interrupted_done))
            ;
        pthread_kill(main_thread, SIGUSR1);
    }
    return NULL;
}

static void on_usr1(int sig) {
    (void)sig;
}

static long raw_sleep(clockid_t c, int flags, const struct timespec *t, struct timespec *rem) {
    return syscall(SYS_clock_nanosleep, c, flags, t, rem);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    pthread_t spin;
    pthread_create(&spin, NULL, spinner, NULL);

    // Relative, on the program's clock: 100 ms of CPU time later.
    long long before = ns_of(CLOCK_PROCESS_CPUTIME_ID);
    struct timespec t = {0, 100000000};
    report("process clock, relative", clock_nanosleep(CLOCK_PROCESS_CPUTIME_ID, 0, &t, NULL));
    printf("  its clock advanced 100 ms: %s\n", ns_of(CLOCK_PROCESS_CPUTIME_ID) - before >= 100000000 ? "yes" : "no");

    // Absolute, on the id clock_getcpuclockid gives.
    clockid_t pc;
    if (clock_getcpuclockid(0, &pc))
        return 1;
    long long target = ns_of(pc) + 80000000;
    struct timespec abs = {target / 1000000000, target % 1000000000};
    report("process clock id, absolute", raw_sleep(pc, TIMER_ABSTIME, &abs, NULL));
    printf("  its clock reached the time: %s\n", ns_of(pc) >= target ? "yes" : "no");
    struct timespec past = {0, 1};
    report("process clock, absolute in the past", raw_sleep(CLOCK_PROCESS_CPUTIME_ID, TIMER_ABSTIME, &past, NULL));

    // Another thread's clock: until the spinner has run 50 ms more (250 ms of wall time).
    clockid_t sc;
    if (pthread_getcpuclockid(spin, &sc))
        return 1;
    before = ns_of(sc);
    t.tv_nsec = 50000000;
    report("spinning thread's clock, relative", raw_sleep(sc, 0, &t, NULL));
    printf("  its clock advanced 50 ms: %s\n", ns_of(sc) - before >= 50000000 ? "yes" : "no");

    // A signal with a handler ends the sleep: EINTR, and the CPU time left.
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    main_thread = pthread_self();
    pthread_t nudge;
    pthread_create(&nudge, NULL, nudger, NULL);
    struct timespec long_sleep = {1000, 0}, rem = {0, 0};
    report("process clock, interrupted", raw_sleep(CLOCK_PROCESS_CPUTIME_ID, 0, &long_sleep, &rem));
    atomic_store(&interrupted_done, 1);
    pthread_join(nudge, NULL);
    printf("  time left between 900 and 1000 s: %s\n", rem.tv_sec >= 900 && rem.tv_sec < 1000 ? "yes" : "no");

    // Errors, as Linux gives them (raw calls: glibc answers CLOCK_THREAD_CPUTIME_ID itself).
    t.tv_nsec = 1000;
    report("CLOCK_THREAD_CPUTIME_ID", raw_sleep(CLOCK_THREAD_CPUTIME_ID, 0, &t, NULL));
    report("CLOCK_THREAD_CPUTIME_ID, absolute", raw_sleep(CLOCK_THREAD_CPUTIME_ID, TIMER_ABSTIME, &t, NULL));
    printf("glibc, CLOCK_THREAD_CPUTIME_ID: %d\n", clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &t, NULL));
    clockid_t mine;
    pthread_getcpuclockid(pthread_self(), &mine);
    report("own thread clock id", raw_sleep(mine, 0, &t, NULL));
    report("CLOCK_MONOTONIC_RAW", raw_sleep(CLOCK_MONOTONIC_RAW, 0, &t, NULL));
    report("CLOCK_MONOTONIC_COARSE", raw_sleep(CLOCK_MONOTONIC_COARSE, 0, &t, NULL));
    report("clock 10", raw_sleep(10, 0, &t, NULL));
    report("clock 10, bad pointer", raw_sleep(10, 0, (void *)8, NULL));
    struct timespec bad = {0, 1000000000};
    report("process clock, bad time", raw_sleep(CLOCK_PROCESS_CPUTIME_ID, 0, &bad, NULL));
    report("process clock, bad pointer", raw_sleep(CLOCK_PROCESS_CPUTIME_ID, 0, (void *)8, NULL));
    report("monotonic, unknown flags ignored", raw_sleep(CLOCK_MONOTONIC, 6, &t, NULL));

    atomic_store(&stop, 1);
    pthread_join(spin, NULL);
    return 0;
}
