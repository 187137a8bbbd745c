/* 8 spinning threads and a spinning main thread on fewer CPUs: every thread must at some
 * point run at the same time as main (see main's counter move), which needs the threads that
 * share main's CPU to move to another one now and then, as Linux's balancing of busy CPUs
 * moves them. hrt never moved a thread between busy vCPUs: those placed beside main never ran
 * beside it, and a program waiting for that (crossbeam-deque's `fifo::no_starvation`) spun
 * for good. Gives up after 120 s, saying which threads never did. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

enum { N = 8 };
static atomic_long main_counter;
static atomic_int seen[N], stop;

static void *spin(void *arg) {
    int me = (int)(long)arg;
    long last = atomic_load(&main_counter);
    while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
        long now = atomic_load_explicit(&main_counter, memory_order_relaxed);
        if (now != last && now - last < 1000) atomic_store_explicit(&seen[me], 1, memory_order_relaxed);
        last = now;
    }
    return NULL;
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    pthread_t t[N];
    for (long i = 0; i < N; i++) pthread_create(&t[i], NULL, spin, (void *)i);
    double start = seconds();
    int all = 0;
    while (!all && seconds() - start < 120) {
        for (int k = 0; k < 1000; k++) atomic_fetch_add_explicit(&main_counter, 1, memory_order_relaxed);
        all = 1;
        for (int i = 0; i < N; i++) all &= atomic_load_explicit(&seen[i], memory_order_relaxed);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < N; i++)
        if (!seen[i]) printf("thread %d never ran beside main\n", i);
    printf("%s\n", all ? "every thread ran beside main" : "gave up");
    return !all;
}
