/* An OpenMP program that execs an OpenMP program (itself): the new image must start the
 * runtime afresh, with its own environment, whatever the old image left behind.
 *
 * Stage 1 (no argument) reads its OMP_* settings, runs a team and tasks, then, from inside a
 * region where its other thread has entered the unnamed critical section and never leaves it,
 * sets new OMP_* values and execs itself with "2". Stage 2 prints what it sees (team sizes,
 * schedule, nesting) and uses the critical section, tasks and a reduction: a runtime that kept
 * the old image's lock, settings or teams prints something else or hangs. Run with
 * OMP_NUM_THREADS=2 or more (stage 1 needs a second thread). */
#define _GNU_SOURCE
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int held;

static void settings(const char *stage) {
    omp_sched_t kind;
    int chunk;
    omp_get_schedule(&kind, &chunk);
    printf("%s: max threads %d, schedule %d chunk %d, max active levels %d, dynamic %d, cancellation %d\n", stage,
           omp_get_max_threads(), (int)kind, chunk, omp_get_max_active_levels(), omp_get_dynamic(),
           omp_get_cancellation());
}

static long work(const char *stage) {
    long sum = 0, crit = 0, tasks = 0;
    int team = 0;
#pragma omp parallel reduction(+ : sum)
    {
#pragma omp single
        team = omp_get_num_threads();
#pragma omp for schedule(runtime)
        for (int i = 1; i <= 1000; i++)
            sum += i;
#pragma omp critical
        crit++;
#pragma omp single
        for (int t = 0; t < 50; t++) {
#pragma omp task
            {
#pragma omp atomic
                tasks++;
            }
        }
    }
    printf("%s: team %d, sum %ld, critical entries %s, tasks %ld\n", stage, team, sum,
           crit == team ? "one per thread" : "wrong", tasks);
    return sum;
}

int main(int argc, char **argv) {
    if (argc > 1) {
        settings("stage 2");
        work("stage 2");
        int nested = 0;
#pragma omp parallel num_threads(2)
#pragma omp parallel num_threads(2)
#pragma omp single
#pragma omp atomic
        nested++;
        printf("stage 2: inner teams %d\n", nested);
        printf("all checks passed\n");
        return 0;
    }
    settings("stage 1");
    work("stage 1");
    if (omp_get_max_threads() < 2) {
        printf("stage 1: needs two threads; all checks passed\n");
        return 0;
    }
    fflush(stdout);
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 1) {
#pragma omp critical
            {
                __atomic_store_n(&held, 1, __ATOMIC_RELEASE);
                for (;;)
                    __builtin_ia32_pause();
            }
        } else {
            while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
                __builtin_ia32_pause();
            setenv("OMP_NUM_THREADS", "3", 1);
            setenv("OMP_SCHEDULE", "guided,7", 1);
            setenv("OMP_MAX_ACTIVE_LEVELS", "2", 1);
            setenv("OMP_DYNAMIC", "false", 1);
            char *again[] = {argv[0], "2", NULL};
            execv("/proc/self/exe", again);
            perror("execv");
            _exit(1);
        }
    }
    return 1;
}
