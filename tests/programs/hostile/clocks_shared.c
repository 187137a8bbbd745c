/* The clocks are system-wide: CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME and
 * CLOCK_MONOTONIC_RAW (not slewed by the time keeper: 256 ms from CLOCK_MONOTONIC on one
 * host) read in the program (through the vDSO and as system calls, in a forked child too)
 * must lie between what its starter read just before starting it and just after it ended.
 * Prints one line per reading, "<clock> <who>-<how> <ns>", for the starter to check; then
 * whether an absolute CLOCK_MONOTONIC clock_nanosleep and futex wait end no earlier than their
 * deadlines. */
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long ns_of(struct timespec t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }

static void readings(const char *who) {
    const struct { clockid_t id; const char *name; } clocks[] = {
        {CLOCK_REALTIME, "realtime"}, {CLOCK_MONOTONIC, "monotonic"}, {CLOCK_BOOTTIME, "boottime"},
        {CLOCK_MONOTONIC_RAW, "monotonic_raw"}};
    for (int i = 0; i < 4; i++) {
        struct timespec a, b;
        clock_gettime(clocks[i].id, &a);
        syscall(SYS_clock_gettime, clocks[i].id, &b);
        printf("%s %s-vdso %lld\n%s %s-syscall %lld\n", clocks[i].name, who, ns_of(a), clocks[i].name, who, ns_of(b));
    }
}

int main(void) {
    setvbuf(stdout, 0, _IONBF, 0);
    readings("main");
    pid_t c = fork();
    if (c == 0) {
        readings("child");
        _exit(0);
    }
    waitpid(c, 0, 0);
    /* Absolute monotonic waits 20 ms ahead: they end after that time of the host's. */
    struct timespec now, until;
    clock_gettime(CLOCK_MONOTONIC, &now);
    until.tv_sec = now.tv_sec;
    until.tv_nsec = now.tv_nsec + 20000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, 0);
    clock_gettime(CLOCK_MONOTONIC, &now);
    printf("absolute sleep ended on time: %d\n", ns_of(now) >= ns_of(until));
    int word = 0;
    until.tv_nsec += 20000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    syscall(SYS_futex, &word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, 0, &until, 0, FUTEX_BITSET_MATCH_ANY);
    clock_gettime(CLOCK_MONOTONIC, &now);
    printf("absolute futex wait ended on time: %d\n", ns_of(now) >= ns_of(until));
    return 0;
}
