/* Short sleeps next to threads that never block, as a Go program's sysmon sleeps 20 us at a
 * time next to the runtime's busy threads. Two spinners and the sleeper share the vCPUs (all
 * three share one with --cpus 1): while a spinner waits in a run queue the kernel arms no
 * timer for the sleeper (the preemption tick and thread switches end its sleeps), and an idle
 * vCPU that would halt keeps polling for a sleeper due soon. Every sleep must end, and none
 * early. Prints one line when the spinners have stopped. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#define SLEEPS 200
#define SLEEP_NS 20000L

static atomic_int stop;
static atomic_long spins[2];

static void *spinner(void *arg) {
    atomic_long *count = arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        atomic_fetch_add_explicit(count, 1, memory_order_relaxed);
    return NULL;
}

static long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

int main(void) {
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, spinner, &spins[i]) != 0)
            return 1;
    int early = 0;
    struct timespec ts = {0, SLEEP_NS};
    /* Both spinners run (one may wait for a preemption tick behind the other) while this
     * thread sleeps. */
    while (atomic_load(&spins[0]) == 0 || atomic_load(&spins[1]) == 0)
        nanosleep(&ts, NULL);
    for (int i = 0; i < SLEEPS; i++) {
        long start = now_ns();
        nanosleep(&ts, NULL);
        if (now_ns() - start < SLEEP_NS)
            early++;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("%d sleeps of 20 us beside 2 spinners, %d ended early\n", SLEEPS, early);
    return 0;
}
