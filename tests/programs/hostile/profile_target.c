// A program for `hrt run --profile`: it spends a quarter second of CPU time in one function
// with a name of its own, so that the profile's busiest function must be that one. A second
// thread, which only sleeps, has the kernel start a second vCPU, idle meanwhile. Then it spends
// a tenth of a second in the C library's memset (a shared library when built dynamically).
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((noinline)) static double spins_in_this_function(double until) {
    volatile double x = 0;
    long i = 0;
    // The clock's vDSO call is read only every 4096 rounds: nearly every sample lands here.
    while ((++i & 4095) != 0 || seconds() < until)
        x += i * 0.5;
    return x;
}

__attribute__((noinline)) static long spends_in_libc(double until) {
    static char buf[1 << 20];
    long n = 0;
    while (seconds() < until) {
        memset(buf, (int)n, sizeof buf);
        n += buf[n % sizeof buf];
    }
    return n;
}

static void *sleeper(void *arg) {
    (void)arg;
    usleep(50000);
    return NULL;
}

int main(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, sleeper, NULL) != 0)
        return 1;
    double x = spins_in_this_function(seconds() + 0.25);
    pthread_join(t, NULL);
    if (spends_in_libc(seconds() + 0.1) < 0)
        abort();
    printf("done: %s\n", x > 0 ? "sum positive" : "sum zero");
    return 0;
}
