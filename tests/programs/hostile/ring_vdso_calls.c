/* The vDSO's own system calls (the CPU-time clocks, clock(), gettimeofday with a time zone,
 * getcpu's fallback): results as natively, whether or not the kernel rewrote its `syscall`s
 * into calls. `clocks` makes 2,000 of each (past the rewriter's warm-up), `none` makes none;
 * `clocks-where` also prints where the vDSO is (for the test to find its sites). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/time.h>
#include <time.h>

static long long ns_of(clockid_t c) {
    struct timespec t;
    if (clock_gettime(c, &t) != 0)
        return -1;
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    int where = argc >= 2 && strcmp(argv[1], "clocks-where") == 0;
    if (argc < 2 || (strcmp(argv[1], "clocks") != 0 && !where)) {
        printf("nothing asked\n");
        return 0;
    }
    int ok_process = 1, ok_thread = 1, ok_clock = 1, ok_tz = 1, ok_bad = 1;
    long long last_p = 0, last_t = 0;
    clock_t last_c = 0;
    volatile double sink = 0;
    for (int i = 0; i < 2000; i++) {
        for (int k = 0; k < 200; k++)
            sink += k * 0.5;
        /* The thread's clock first: the process's, read after it, holds at least as much. */
        long long t = ns_of(CLOCK_THREAD_CPUTIME_ID);
        long long p = ns_of(CLOCK_PROCESS_CPUTIME_ID);
        clock_t c = clock();
        ok_process &= p > 0 && p >= last_p;
        ok_thread &= t > 0 && t >= last_t && t <= p;
        ok_clock &= c != (clock_t)-1 && c >= last_c;
        last_p = p, last_t = t, last_c = c;
        struct timeval tv;
        struct timezone tz;
        ok_tz &= gettimeofday(&tv, &tz) == 0 && tv.tv_sec > 1600000000;
        struct timespec ts;
        ok_bad &= clock_gettime((clockid_t)12345, &ts) == -1;
    }
    printf("process CPU clock rises: %d\n", ok_process);
    printf("thread CPU clock rises, within the process's: %d\n", ok_thread);
    printf("clock() rises: %d\n", ok_clock);
    printf("gettimeofday with a time zone: %d\n", ok_tz);
    printf("unknown clock refused: %d\n", ok_bad);
    printf("some CPU time used: %d\n", last_p > 1000);
    if (where)
        printf("vdso at %#lx\n", getauxval(AT_SYSINFO_EHDR));
    return 0;
}
