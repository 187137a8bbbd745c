// Priority-inheritance mutexes (PTHREAD_PRIO_INHERIT: FUTEX_LOCK_PI, TRYLOCK_PI, UNLOCK_PI):
// mutual exclusion under contention, trylock, timed and clock locks, error checking, a robust
// owner's death, and a signal handler run while a thread waits for the lock (the lock call
// starts again, never EINTR).
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t m;
static long counter;
static volatile int handled;

static void *add(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        pthread_mutex_lock(&m);
        counter++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

// Holds `m` from before `holding` is set until 50 ms after `release` is (main's timedlock has
// timed out; its clocklock then waits for the holder).
static volatile int holding, release;

static void *hold(void *arg) {
    pthread_mutex_lock(&m);
    holding = 1;
    struct timespec t = {0, 1000000};
    while (!release)
        nanosleep(&t, NULL);
    t.tv_nsec = 50000000;
    nanosleep(&t, NULL);
    pthread_mutex_unlock(&m);
    (void)arg;
    return NULL;
}

static void *die_holding(void *arg) {
    pthread_mutex_lock((pthread_mutex_t *)arg);
    return NULL;
}

static void on_usr1(int sig) {
    (void)sig;
    handled++;
}

static void *lock_through_signal(void *arg) {
    (void)arg;
    int r = pthread_mutex_lock(&m);
    printf("lock while a handler ran: %s\n", strerror(r));
    pthread_mutex_unlock(&m);
    return NULL;
}

// A PTHREAD_PRIO_INHERIT mutex of `type`, robust if asked.
static void init_pi(pthread_mutex_t *mutex, int type, int robust) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
    pthread_mutexattr_settype(&a, type);
    if (robust)
        pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(mutex, &a);
    pthread_mutexattr_destroy(&a);
}

static void pause_ms(long ms) {
    struct timespec t = {ms / 1000, ms % 1000 * 1000000};
    nanosleep(&t, NULL);
}

int main(void) {
    pthread_mutexattr_t at;
    pthread_mutexattr_init(&at);
    printf("setprotocol: %d\n", pthread_mutexattr_setprotocol(&at, PTHREAD_PRIO_INHERIT));
    printf("init: %d\n", pthread_mutex_init(&m, &at));
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, add, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    printf("counter: %ld\n", counter);
    int first = pthread_mutex_trylock(&m);
    int again = pthread_mutex_trylock(&m);
    printf("trylock: %d, again: %s\n", first, strerror(again));
    pthread_mutex_unlock(&m);

    pthread_t h;
    pthread_create(&h, NULL, hold, NULL);
    while (!holding)
        pause_ms(1);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50000000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    printf("timedlock while held: %s\n", strerror(pthread_mutex_timedlock(&m, &ts)));
    release = 1;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += 5;
    printf("clocklock after the holder: %s\n", strerror(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &ts)));
    pthread_mutex_unlock(&m);
    pthread_join(h, NULL);

    // A waiter interrupted by a handler (no SA_RESTART) goes on waiting and gets the lock.
    signal(SIGUSR1, on_usr1);
    pthread_mutex_lock(&m);
    pthread_t w;
    pthread_create(&w, NULL, lock_through_signal, NULL);
    pause_ms(50);
    pthread_kill(w, SIGUSR1);
    pause_ms(50);
    pthread_mutex_unlock(&m);
    pthread_join(w, NULL);
    printf("handler ran: %d\n", handled);

    pthread_mutex_t e;
    init_pi(&e, PTHREAD_MUTEX_ERRORCHECK, 0);
    first = pthread_mutex_lock(&e);
    again = pthread_mutex_lock(&e);
    printf("error-checking: lock %d, again %s\n", first, strerror(again));
    pthread_mutex_unlock(&e);
    printf("error-checking: unlock unowned %s\n", strerror(pthread_mutex_unlock(&e)));

    pthread_mutex_t r;
    init_pi(&r, PTHREAD_MUTEX_DEFAULT, 1);
    pthread_t d;
    pthread_create(&d, NULL, die_holding, &r);
    pthread_join(d, NULL);
    int got = pthread_mutex_lock(&r);
    printf("robust, owner gone: %s\n", strerror(got));
    if (got == EOWNERDEAD)
        printf("consistent: %d\n", pthread_mutex_consistent(&r));
    printf("unlock: %d\n", pthread_mutex_unlock(&r));
    printf("pi mutexes: done\n");
    return 0;
}
