/* A team's task bookkeeping: recursive tasks with taskwait (fib) in teams of one, two and four
 * threads; a taskwait whose children all run on other threads; and a team of one whose
 * detachable task's event is fulfilled by a thread outside OpenMP (a pthread) while the team
 * keeps making and finishing tasks, so both finish tasks of the team at once. Every printed line is independent of timing
 * and of the number of CPUs. Exit status 0 when all checks pass. */
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static int failures;

static void check(const char *what, int ok) {
    printf("%-64s %s\n", what, ok ? "ok" : "FAILED");
    failures += !ok;
}

static long fib(int n) {
    if (n < 2)
        return n;
    long a, b;
#pragma omp task shared(a)
    a = fib(n - 1);
#pragma omp task shared(b)
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}

static omp_event_handle_t event;
static volatile int event_ready, fulfilled;

static void *fulfiller(void *arg) {
    (void)arg;
    while (!__atomic_load_n(&event_ready, __ATOMIC_ACQUIRE))
        usleep(100);
    usleep(2000);
    fulfilled = 1;
    omp_fulfill_event(event);
    return 0;
}

int main(void) {
    for (int threads = 1; threads <= 4; threads *= 2) {
        long r = 0;
#pragma omp parallel num_threads(threads)
#pragma omp single
        r = fib(22);
        char what[64];
        snprintf(what, sizeof what, "fib(22) as tasks, team of %d", threads);
        check(what, r == 17711);
    }

    /* The children are all taken by the other threads while their maker waits. */
    int sum = 0;
#pragma omp parallel num_threads(4) reduction(+ : sum)
#pragma omp single
    for (int round = 0; round < 200; round++) {
        int got[8] = {0};
        for (int i = 0; i < 8; i++) {
#pragma omp task shared(got) firstprivate(i)
            {
                for (volatile int k = 0; k < 2000; k++)
                    ;
                got[i] = i + 1;
            }
        }
#pragma omp taskwait
        for (int i = 0; i < 8; i++)
            sum += got[i];
    }
    check("taskwait for children other threads ran", sum == 200 * 36);

    /* A team of one, a detachable task fulfilled by a pthread, tasks all along. */
    pthread_t t;
    pthread_create(&t, 0, fulfiller, 0);
    long made = 0, seen_fulfilled = -1;
#pragma omp parallel num_threads(1) shared(made, seen_fulfilled)
    {
        omp_event_handle_t ev;
#pragma omp task detach(ev)
        made += 0;
        event = ev;
        __atomic_store_n(&event_ready, 1, __ATOMIC_RELEASE);
        for (int round = 0; round < 20000; round++) {
            long a = 0;
#pragma omp task shared(a)
            a = fib(4);
#pragma omp taskwait
            made += a == 3;
        }
#pragma omp taskwait
        seen_fulfilled = fulfilled;
    }
    pthread_join(t, 0);
    check("a team of one's tasks while a pthread fulfils its event", made == 20000 && seen_fulfilled == 1);
    return failures != 0;
}
