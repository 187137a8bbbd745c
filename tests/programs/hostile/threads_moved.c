/* Threads that idle vCPUs may take from busy ones (sched/balance.rs) keep their state across
 * the move: six threads (more than the vCPUs), each with a thread-local id, errno, a running
 * floating-point sum in vector registers and its own stack, make forwarded calls (writes to
 * /dev/null, which end where a thread may change CPU), yield, and sleep briefly; every check
 * is made after each call, and the sums printed at the end are the same as natively. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define THREADS 6
#define ROUNDS 3000

static __thread long my_id = -1;
static int devnull;
static long bad[THREADS];
static double sums[THREADS];

static void *worker(void *arg) {
    long id = (long)arg;
    my_id = id;
    volatile char stack_mark[64];
    memset((char *)stack_mark, (int)id, sizeof stack_mark);
    double x = 1.0 + id, y = 0.5;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 0; i < ROUNDS; i++) {
        x = x * 1.0000001 + y;
        y = y * 0.999 + 0.001 * i;
        errno = 1000 + (int)id;
        char byte = (char)i;
        if (write(devnull, &byte, 1) != 1)
            bad[id]++;
        if (errno != 1000 + id || my_id != id)
            bad[id]++;
        if (i % 97 == 0)
            sched_yield();
        if (i % 500 == 0) {
            struct timespec t = {0, 100000};
            nanosleep(&t, 0);
        }
        int cpu = sched_getcpu();
        if (cpu < 0 || cpu >= cpus)
            bad[id]++;
        for (int k = 0; k < (int)sizeof stack_mark; k++)
            if (stack_mark[k] != (char)id)
                bad[id]++;
    }
    sums[id] = x + y;
    return 0;
}

int main(void) {
    devnull = open("/dev/null", O_WRONLY);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], 0, worker, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], 0);
    for (int i = 0; i < THREADS; i++)
        printf("thread %d: sum %.9g, bad %ld\n", i, sums[i], bad[i]);
    return 0;
}
