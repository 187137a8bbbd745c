// Timer details a differential fuzzer found different (stop 100): a periodic ITIMER_REAL ran
// on while its SIGALRM was still pending (Linux re-arms it when the signal is taken: until
// then getitimer and alarm say 0); a zero value kept a POSIX timer's interval and dropped the
// CPU-time itimers' (Linux does the opposite); a deleted POSIX timer's id was given to the
// next timer at once (Linux counts ids up), so the stale id named the new timer; setitimer
// with a NULL value left the timer running (Linux disarms it) and checked `which` before
// reading the value (Linux: EFAULT first); clock_nanosleep, timer_create and clock_settime
// checked clock ids before their pointers and said EINVAL for a descriptor's clock.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

// Waits (without a time limit of its own) until SIGALRM is pending.
static void until_pending(void) {
    sigset_t p;
    do {
        usleep(1000);
        sigpending(&p);
    } while (!sigismember(&p, SIGALRM));
}

static int fresh_id;

int main(void) {
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    sigprocmask(SIG_BLOCK, &alrm, NULL);
    struct itimerval v = {{30, 0}, {0, 1000}}, g;
    setitimer(ITIMER_REAL, &v, NULL);
    until_pending();
    getitimer(ITIMER_REAL, &g);
    printf("pending SIGALRM: value %ld s, running %d\n", (long)g.it_value.tv_sec, g.it_value.tv_usec > 0);
    printf("alarm(0) while pending: %u\n", alarm(0));
    setitimer(ITIMER_REAL, &v, NULL);
    until_pending();
    int sig;
    sigwait(&alrm, &sig);
    getitimer(ITIMER_REAL, &g);
    printf("taken: running again %d, interval %ld s\n", g.it_value.tv_sec >= 20, (long)g.it_interval.tv_sec);
    printf("alarm(0) after: %d\n", alarm(0) >= 20);

    for (int which = 0; which < 3; which++) {
        struct itimerval z = {{0, 5000}, {0, 0}}, got;
        setitimer(which, &z, NULL);
        getitimer(which, &got);
        printf("itimer %d set with value 0: interval %ld us, value %ld us\n", which,
               (long)got.it_interval.tv_usec, (long)got.it_value.tv_usec);
    }
    timer_t t;
    struct itimerspec s = {{0, 5000000}, {0, 0}}, o;
    timer_create(CLOCK_MONOTONIC, NULL, &t);
    timer_settime(t, 0, &s, NULL);
    timer_gettime(t, &o);
    printf("POSIX timer set with value 0: interval %ld ns\n", o.it_interval.tv_nsec);
    s.it_value.tv_sec = 5;
    timer_settime(t, 0, &s, NULL);
    s.it_value.tv_sec = 0;
    timer_settime(t, 0, &s, &o);
    printf("  old value when disarmed: interval %ld ns, running %d\n", o.it_interval.tv_nsec, o.it_value.tv_sec >= 2);
    timer_gettime(t, &o);
    printf("  after: interval %ld ns\n", o.it_interval.tv_nsec);

    struct itimerval hundred = {{0, 0}, {100, 0}}, before, now;
    setitimer(ITIMER_REAL, &hundred, NULL);
    long r = syscall(SYS_setitimer, ITIMER_REAL, NULL, &before);
    getitimer(ITIMER_REAL, &now);
    printf("setitimer(NULL): %ld, was running %d, now %ld s\n", r, before.it_value.tv_sec > 50, (long)now.it_value.tv_sec);
    r = syscall(SYS_setitimer, 7, (void *)1, NULL);
    printf("setitimer(bad which, bad pointer): %ld errno %d\n", r, r < 0 ? errno : 0);

    // Clock ids in Linux's order: a descriptor's clock (~fd << 3 | 3) has no sleep and no
    // timers (EOPNOTSUPP); a bad CPU clock's id is looked at after the pointers (EFAULT).
    int fd_clock = -5, bad_cpu = -1;
    struct timespec zero = {0, 0};
    r = syscall(SYS_clock_nanosleep, fd_clock, 0, &zero, NULL);
    printf("clock_nanosleep(descriptor clock): %ld errno %d\n", r, r < 0 ? errno : 0);
    r = syscall(SYS_timer_create, fd_clock, NULL, &fresh_id);
    printf("timer_create(descriptor clock): %ld errno %d\n", r, r < 0 ? errno : 0);
    r = syscall(SYS_timer_create, bad_cpu, NULL, NULL);
    printf("timer_create(bad CPU clock, NULL id): %ld errno %d\n", r, r < 0 ? errno : 0);
    r = syscall(SYS_clock_settime, bad_cpu, NULL);
    printf("clock_settime(bad CPU clock, NULL): %ld errno %d\n", r, r < 0 ? errno : 0);
    r = syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, NULL, NULL);
    printf("clock_nanosleep(NULL request): %ld errno %d\n", r, r < 0 ? errno : 0);

    timer_t ids[4], fresh;
    for (int i = 0; i < 4; i++)
        timer_create(CLOCK_MONOTONIC, NULL, &ids[i]);
    timer_delete(ids[1]);
    timer_create(CLOCK_MONOTONIC, NULL, &fresh);
    printf("new timer takes the deleted id: %d\n", fresh == ids[1]);
    printf("timer_gettime on the deleted id: %d\n", timer_gettime(ids[1], &o));
    printf("timer details: done\n");
    return 0;
}
