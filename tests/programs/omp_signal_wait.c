// Signals taken by threads that wait inside the OpenMP runtime. A signal sent to the process
// goes to a thread that does not block it (POSIX), and a thread blocked in a wait takes it and
// runs the handler (a thread of libgomp waits in futex calls, which a signal interrupts): when
// every such thread waits in the runtime, one of them must still run the handler, and here the
// handler is what ends the wait. A helper thread that blocks every signal sends SIGUSR1 with
// kill() when an OpenMP thread asks it to (a semaphore); it is the only sender.
// 1. barrier: the primary thread blocks SIGUSR1, asks for the signal and waits for its
//    handler to have run before it reaches the barrier where the other threads wait.
// 2. lock: the primary thread blocks SIGUSR1 and holds a lock the other threads wait for
//    while it asks for the signal and waits for the handler.
// Both need a second thread: their regions ask for 3 threads. (OpenMP 5.0's detach clause
// invites a handler that calls omp_fulfill_event, but libgomp 12 hangs when the handler runs
// on a thread of the team that waits at the barrier, so that is not a check here.) The output
// does not depend on timing or on the number of threads.
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#define ROUNDS 20

static sem_t ask;
static atomic_int handled;
static int failures;

static void check(const char *what, int ok) {
    if (!ok) {
        failures++;
        printf("FAIL: %s\n", what);
    }
}

static void on_usr1(int sig) {
    (void)sig;
    atomic_fetch_add(&handled, 1);
}

// The helper: every signal blocked, so the signal it sends goes to an OpenMP thread.
static void *sender(void *arg) {
    (void)arg;
    for (;;) {
        while (sem_wait(&ask) != 0) {
        }
        kill(getpid(), SIGUSR1);
    }
    return NULL;
}

// With another thread in the team to take it: asks for the signal and waits (outside the
// runtime) until its handler ran, `before` being the count of handler runs so far.
static void ask_and_wait(int before) {
    if (omp_get_num_threads() == 1) {
        return;
    }
    sem_post(&ask);
    while (atomic_load(&handled) < before + 1) {
        sched_yield();
    }
}

static void block_usr1(int how) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    pthread_sigmask(how, &s, NULL);
}

static void barrier_rounds(void) {
    int missed = 0;
    for (int r = 0; r < ROUNDS; r++) {
        int before = atomic_load(&handled);
#pragma omp parallel num_threads(3)
        {
            if (omp_get_thread_num() == 0) {
                block_usr1(SIG_BLOCK);
                ask_and_wait(before);
                block_usr1(SIG_UNBLOCK);
            }
#pragma omp barrier
            if (omp_get_num_threads() > 1 && atomic_load(&handled) != before + 1) {
#pragma omp atomic
                missed++;
            }
        }
    }
    check("one handler run per round, before the barrier ended", missed == 0);
    printf("barrier: %d rounds\n", ROUNDS);
}

static void lock_rounds(void) {
    omp_lock_t lock;
    omp_init_lock(&lock);
    int got = 0;
    for (int r = 0; r < ROUNDS; r++) {
        int before = atomic_load(&handled);
#pragma omp parallel num_threads(3)
        {
            if (omp_get_thread_num() == 0) {
                block_usr1(SIG_BLOCK);
                omp_set_lock(&lock);
            }
#pragma omp barrier
            if (omp_get_thread_num() == 0) {
                ask_and_wait(before);
                omp_unset_lock(&lock);
                block_usr1(SIG_UNBLOCK);
            } else {
                omp_set_lock(&lock);
#pragma omp atomic
                got++;
                omp_unset_lock(&lock);
            }
        }
    }
    omp_destroy_lock(&lock);
    int others = 0;
#pragma omp parallel num_threads(3)
#pragma omp single
    others = omp_get_num_threads() - 1;
    check("every other thread took the lock each round", got == ROUNDS * others);
    printf("lock: %d rounds\n", ROUNDS);
}

int main(void) {
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    sem_init(&ask, 0, 0);
    // The helper inherits a mask that blocks everything.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    pthread_create(&t, NULL, sender, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    barrier_rounds();
    lock_rounds();
    printf("handler runs: %d\n", atomic_load(&handled));
    if (failures == 0) {
        printf("all checks passed\n");
    }
    return failures != 0;
}
