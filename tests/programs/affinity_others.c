/* Another thread's CPU mask. sched_setaffinity with a tid other than the caller's must take
 * effect as on Linux, which moves that thread:
 * - a thread created with an affinity attribute starts on the CPU of its mask (glibc's
 *   pthread_create sets the mask from the creator, right after the clone; libgomp's bound
 *   teams are made this way);
 * - a thread spinning in user code, given a mask by another thread, runs there by the time the
 *   call returns (it reports its CPU as soon as it is told to): on another CPU with three
 *   CPUs or more, on the caller's CPU with two;
 * - a thread blocked in a wait, given a mask, runs on that CPU once woken;
 * - pthread_getaffinity_np of another thread reads the mask set for it.
 * The main thread stays on CPU 0, every target is the last CPU: the output is the same on any
 * number of CPUs (with one, every target is CPU 0). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static int last;
static atomic_int report, reported, spinning;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int go;

static cpu_set_t only(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return s;
}

/* Whether the caller runs on `cpu` and its mask is that CPU alone. */
static int on_alone(int cpu) {
    cpu_set_t got;
    if (pthread_getaffinity_np(pthread_self(), sizeof got, &got) != 0)
        return 0;
    return sched_getcpu() == cpu && CPU_COUNT(&got) == 1 && CPU_ISSET(cpu, &got);
}

static void *started_bound(void *arg) {
    (void)arg;
    printf("a thread created with a mask starts on its CPU: %s\n", on_alone(last) ? "yes" : "no");
    return NULL;
}

/* Spins on memory only (no call into the kernel) until told to report. */
static void *spinner(void *arg) {
    (void)arg;
    atomic_store(&spinning, 1);
    while (!atomic_load(&report))
        ;
    int ok = on_alone(last);
    atomic_store(&reported, 1);
    printf("a spinning thread given a mask runs on its CPU: %s\n", ok ? "yes" : "no");
    return NULL;
}

static void *waiter(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    go = 1;
    pthread_cond_broadcast(&cv);
    while (go != 2)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    printf("a blocked thread given a mask runs on its CPU once woken: %s\n", on_alone(last) ? "yes" : "no");
    return NULL;
}

int main(void) {
    last = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
    cpu_set_t zero = only(0), target = only(last);
    if (pthread_setaffinity_np(pthread_self(), sizeof zero, &zero) != 0 || !on_alone(0)) {
        printf("main thread not on CPU 0\n");
        return 1;
    }

    /* 1. Created with an affinity attribute. */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setaffinity_np(&attr, sizeof target, &target);
    pthread_t t;
    if (pthread_create(&t, &attr, started_bound, NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    pthread_attr_destroy(&attr);

    /* 2. Spinning: on CPU 1 with three CPUs or more (running elsewhere, the call interrupts
     * it), else on CPU 0 beside main (it moves when it next gets the CPU back). */
    cpu_set_t start = only(last >= 2 ? 1 : 0);
    pthread_attr_init(&attr);
    pthread_attr_setaffinity_np(&attr, sizeof start, &start);
    if (pthread_create(&t, &attr, spinner, NULL) != 0)
        return 1;
    pthread_attr_destroy(&attr);
    while (!atomic_load(&spinning))
        sched_yield();
    if (pthread_setaffinity_np(t, sizeof target, &target) != 0)
        printf("pthread_setaffinity_np of another thread failed\n");
    cpu_set_t read_back;
    int same = pthread_getaffinity_np(t, sizeof read_back, &read_back) == 0 && CPU_EQUAL(&read_back, &target);
    printf("another thread's mask reads back as set: %s\n", same ? "yes" : "no");
    atomic_store(&report, 1);
    while (!atomic_load(&reported))
        sched_yield();
    pthread_join(t, NULL);

    /* 3. Blocked in a condition wait. */
    if (pthread_create(&t, NULL, waiter, NULL) != 0)
        return 1;
    pthread_mutex_lock(&mu);
    while (go != 1)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    /* It is in (or on its way into) the wait: the mutex is free only once it waits. */
    pthread_mutex_lock(&mu);
    if (pthread_setaffinity_np(t, sizeof target, &target) != 0)
        printf("pthread_setaffinity_np of another thread failed\n");
    go = 2;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);

    printf("main thread still on CPU 0: %s\n", on_alone(0) ? "yes" : "no");
    return 0;
}
