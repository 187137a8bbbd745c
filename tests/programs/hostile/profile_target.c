// A program for `hrt run --profile`: it spends about a third of a second of CPU time in one
// function with a name of its own, and about a tenth of that in the C library's memset (a
// shared library when built dynamically), so that the profile's busiest function of the
// program must be the first. Both phases are fixed amounts of work, not of time: a vCPU the
// host keeps waiting takes fewer samples, in both alike. A second thread, which only sleeps,
// has the kernel start a second vCPU, idle meanwhile.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static double spins_in_this_function(long rounds) {
    volatile double x = 0;
    for (long i = 0; i < rounds; i++)
        x += i * 0.5;
    return x;
}

__attribute__((noinline)) static long spends_in_libc(int calls) {
    static char buf[1 << 20];
    long n = 0;
    for (int i = 0; i < calls; i++) {
        memset(buf, i, sizeof buf);
        n += (unsigned char)buf[i % sizeof buf];
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
    double x = spins_in_this_function(100L * 1000 * 1000);
    pthread_join(t, NULL);
    if (spends_in_libc(3000) < 0)
        abort();
    printf("done: %s\n", x > 0 ? "sum positive" : "sum zero");
    return 0;
}
