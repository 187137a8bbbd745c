/* CLOCK_TAI (the host's CLOCK_REALTIME plus its TAI offset: clock_gettime, an absolute
 * clock_nanosleep, timer_create) and every clock's resolution (1 ns, the coarse clocks the
 * host's tick), as on Linux: both were EINVAL or 1 ns under hrt. Another process's CPU clock
 * (clock_getcpuclockid, clock_gettime: the host's answer; it was ESRCH), and the clock's state
 * read with adjtimex (ENOSYS before).
 * Usage: clocks_tai_res */
#include <errno.h>
#include <signal.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int main(void) {
    int ids[] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID,
                 CLOCK_MONOTONIC_RAW, CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME, CLOCK_TAI, 12};
    for (unsigned i = 0; i < sizeof ids / sizeof *ids; i++) {
        struct timespec res = {0, 0}, now;
        errno = 0;
        int r = clock_getres(ids[i], &res);
        int g = clock_gettime(ids[i], &now);
        printf("clock %2d: getres %d res %ld s %ld ns, gettime %d %s\n", ids[i], r, (long)res.tv_sec, res.tv_nsec, g,
               g ? strerror(errno) : "");
    }
    struct timespec real, tai;
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_TAI, &tai);
    long ahead = tai.tv_sec - real.tv_sec + (tai.tv_nsec - real.tv_nsec + 500000000L) / 1000000000L;
    printf("TAI ahead of REALTIME by %ld s\n", ahead);
    struct timespec until = tai;
    until.tv_nsec += 20 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    printf("clock_nanosleep(TAI, absolute): %d\n", clock_nanosleep(CLOCK_TAI, TIMER_ABSTIME, &until, NULL));
    struct timespec after;
    clock_gettime(CLOCK_TAI, &after);
    printf("woke at or after the deadline: %s\n",
           after.tv_sec > until.tv_sec || (after.tv_sec == until.tv_sec && after.tv_nsec >= until.tv_nsec) ? "yes" : "no");
    timer_t id;
    printf("timer_create(TAI): %d\n", timer_create(CLOCK_TAI, NULL, &id));

    /* Another process's CPU clock (init's, a child's) exists; one of no process does not. */
    clockid_t other;
    printf("clock_getcpuclockid(1): %d\n", clock_getcpuclockid(1, &other));
    struct timespec used = {-1, -1};
    int got = clock_gettime(other, &used);
    printf("its clock_gettime: %d, %s\n", got, used.tv_sec >= 0 && used.tv_nsec >= 0 ? "a time" : "none");
    printf("its resolution, NULL: %d\n", clock_getres(other, NULL));
    pid_t c = fork();
    if (c == 0) {
        for (volatile long i = 0; i < 50000000; i++)
            ;
        pause();
        _exit(0);
    }
    clockid_t child;
    printf("a child's clock: %d\n", clock_getcpuclockid(c, &child));
    struct timespec a = {0, 0}, b = {0, 0};
    clock_gettime(child, &a);
    /* 10 ms of the child's CPU time, looked for over up to 10 s (a loaded host runs it late). */
    for (int i = 0; i < 1000 && (b.tv_sec == 0 && b.tv_nsec < 10000000); i++) {
        struct timespec pause_10ms = {0, 10000000};
        nanosleep(&pause_10ms, 0);
        clock_gettime(child, &b);
    }
    printf("the child's clock runs: %s\n", b.tv_sec > 0 || b.tv_nsec >= 10000000 ? "yes" : "no");
    kill(c, SIGKILL);
    waitpid(c, 0, 0);
    printf("no such process: %d\n", clock_getcpuclockid(999999999, &other));

    /* The clock's state, read only (adjtimex with modes 0, ntp_gettime): the host's. */
    struct timex tx = {0};
    int state = adjtimex(&tx);
    printf("adjtimex read: %d, tick %ld\n", state, tx.tick);
    struct ntptimeval ntv;
    printf("ntp_gettime: %d\n", ntp_gettime(&ntv) == state);
    errno = 0;
    int bad = adjtimex((struct timex *)16);
    printf("adjtimex at a bad address: %d %s\n", bad, strerror(errno));
    return 0;
}
