/* Which clocks timer_create accepts (Linux: none on CLOCK_MONOTONIC_RAW and the COARSE
 * clocks, EOPNOTSUPP; hrt made them), and setitimer with a zero value and an interval: the
 * timer is off and getitimer shows no interval (hrt kept it). Prints each answer. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>
#include <time.h>

int main(void) {
    const clockid_t clocks[] = {CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID,
                                CLOCK_MONOTONIC_RAW, CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE, CLOCK_BOOTTIME,
                                CLOCK_TAI};
    for (unsigned i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
        timer_t t;
        struct sigevent se = {.sigev_notify = SIGEV_NONE};
        errno = 0;
        int rc = timer_create(clocks[i], &se, &t);
        printf("timer_create(clock %d): %d errno %d\n", (int)clocks[i], rc, rc ? errno : 0);
        if (rc == 0)
            timer_delete(t);
    }
    struct itimerval off_with_interval = {{0, 1}, {0, 0}}, got;
    setitimer(ITIMER_REAL, &off_with_interval, NULL);
    getitimer(ITIMER_REAL, &got);
    printf("setitimer value 0, interval 1 us: getitimer interval %ld us, value %ld us\n",
           got.it_interval.tv_sec * 1000000 + got.it_interval.tv_usec, got.it_value.tv_sec * 1000000 + got.it_value.tv_usec);
    return 0;
}
