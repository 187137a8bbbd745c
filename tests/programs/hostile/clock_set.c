/* Setting the clock: Linux's answers up to the change itself (which this program never asks
 * for: every call here is refused). clock_settime of a clock that cannot be set, of a CPU-time
 * clock, with a bad pointer or a time out of range; settimeofday with microseconds or a time
 * zone out of range, or nothing to set; and, in a child that dropped CAP_SYS_TIME, EPERM for a
 * valid time. hrt answered ENOSYS to all of them. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "drop_cap.h"

static void show(const char *what, long r) {
    printf("%-44s %ld %s\n", what, r, r < 0 ? strerror(errno) : "");
}

static long settime(long clock, const void *ts) {
    return syscall(SYS_clock_settime, clock, ts);
}

static long settod(const void *tv, const void *tz) {
    return syscall(SYS_settimeofday, tv, tz);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    show("clock_settime MONOTONIC", settime(CLOCK_MONOTONIC, &now));
    show("clock_settime BOOTTIME", settime(CLOCK_BOOTTIME, &now));
    show("clock_settime TAI", settime(CLOCK_TAI, &now));
    show("clock_settime clock 99", settime(99, &now));
    show("clock_settime MONOTONIC, bad pointer", settime(CLOCK_MONOTONIC, (void *)8));
    show("clock_settime PROCESS_CPUTIME_ID", settime(CLOCK_PROCESS_CPUTIME_ID, &now));
    show("clock_settime THREAD_CPUTIME_ID, bad pointer", settime(CLOCK_THREAD_CPUTIME_ID, (void *)8));
    show("clock_settime REALTIME, bad pointer", settime(CLOCK_REALTIME, (void *)8));
    long own_cpu = (~(long)getpid() << 3) | 2; /* this process's CPU clock by pid (CPUCLOCK_SCHED) */
    show("clock_settime own CPU clock by pid", settime(own_cpu, &now));
    show("clock_settime own CPU clock, bad pointer", settime(own_cpu, (void *)8));
    /* CPU clocks of no process (the pid in the id does not exist), of pid 1, and CLOCKFD. */
    show("clock_settime CPU clock 0x80000000", settime((clockid_t)0x80000000, &now));
    show("clock_settime CPU clock 0xbffffaa8", settime((clockid_t)0xbffffaa8, &now));
    show("clock_settime pid 1's CPU clock", settime(((~(clockid_t)1) << 3) | 2, &now));
    show("clock_settime a CLOCKFD id", settime((clockid_t)-5, &now));
    struct timespec neg = {-1, 0}, big_ns = {now.tv_sec, 1000000000}, far = {9000000000L, 0};
    show("clock_settime REALTIME, -1 s", settime(CLOCK_REALTIME, &neg));
    show("clock_settime REALTIME, 1e9 ns", settime(CLOCK_REALTIME, &big_ns));
    show("clock_settime REALTIME, year 2255", settime(CLOCK_REALTIME, &far));
    struct timeval bad_us = {now.tv_sec, 2000000};
    show("settimeofday, 2,000,000 us", settod(&bad_us, NULL));
    show("settimeofday, bad pointer", settod((void *)8, NULL));
    struct timezone tz = {16 * 60, 0};
    show("settimeofday, zone 16 h west", settod(NULL, &tz));
    show("settimeofday, nothing", settod(NULL, NULL));

    pid_t c = fork();
    if (c == 0) {
        show("capset without CAP_SYS_TIME", drop_effective_capability(CAP_SYS_TIME));
        struct timeval tv = {now.tv_sec, 0};
        show("clock_settime REALTIME, no capability", settime(CLOCK_REALTIME, &now));
        show("settimeofday, no capability", settod(&tv, NULL));
        show("settimeofday zone, no capability", settod(NULL, &tz));
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    printf("child status %d\n", st);
    return 0;
}
