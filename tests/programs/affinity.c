/* Pinning with sched_setaffinity / pthread_setaffinity_np must move the calling thread: the
 * main thread pins itself to the last CPU, a second thread (which starts inside its creator's
 * mask, as on Linux) to CPU 0, each checks sched_getcpu() and its mask, and with two CPUs or more the two then ping-pong through a spinning flag 10,000
 * times, which only finishes if they really run on different CPUs (no thread yields). The
 * output is the same on any number of CPUs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static int ncpus;
static atomic_int turn;
/* The second thread starts on its creator's CPU; the creator blocks here (rather than spin)
 * until it has moved away. */
static pthread_barrier_t moved;
static const int rounds = 10000;

/* Pins the caller to `cpu`; returns 1 if it then runs there and its mask is that CPU alone. */
static int pin_self(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
        return 0;
    cpu_set_t got;
    if (pthread_getaffinity_np(pthread_self(), sizeof got, &got) != 0)
        return 0;
    return sched_getcpu() == cpu && CPU_COUNT(&got) == 1 && CPU_ISSET(cpu, &got);
}

static void ping_pong(int me) {
    for (int i = 0; i < rounds; i++) {
        while (atomic_load(&turn) != me)
            ;
        atomic_store(&turn, 1 - me);
    }
}

static void *second(void *arg) {
    (void)arg;
    cpu_set_t inherited;
    int inside = pthread_getaffinity_np(pthread_self(), sizeof inherited, &inherited) == 0 &&
                 CPU_COUNT(&inherited) == 1 && CPU_ISSET(ncpus - 1, &inherited) && sched_getcpu() == ncpus - 1;
    printf("second thread starts inside its creator's mask: %s\n", inside ? "yes" : "no");
    printf("second thread pinned to CPU 0: %s\n", pin_self(0) ? "yes" : "no");
    fflush(stdout);
    pthread_barrier_wait(&moved);
    if (ncpus >= 2)
        ping_pong(1);
    return NULL;
}

int main(void) {
    ncpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    printf("main thread pinned to the last CPU: %s\n", pin_self(ncpus - 1) ? "yes" : "no");
    fflush(stdout);
    pthread_barrier_init(&moved, NULL, 2);
    pthread_t t;
    if (pthread_create(&t, NULL, second, NULL) != 0)
        return 1;
    pthread_barrier_wait(&moved);
    if (ncpus >= 2)
        ping_pong(0);
    pthread_join(t, NULL);
    printf("ping-pong between the two CPUs: done\n");
    cpu_set_t bad;
    CPU_ZERO(&bad);
    CPU_SET(1000, &bad);
    printf("a mask without any online CPU is refused: %s\n",
           sched_setaffinity(0, sizeof bad, &bad) != 0 ? "yes" : "no");
    return 0;
}
