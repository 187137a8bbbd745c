// OpenMP cancellation (5.1, 2.20): `cancel` and `cancellation point` for parallel, for (static,
// dynamic, guided), sections and taskgroup, with OMP_CANCELLATION=true and =false (cancel-var).
// The output must not depend on timing or on the number of threads: after one thread cancels,
// every other thread of the construct waits in a loop of cancellation points until it either
// observes the cancellation (cancel-var true) or sees the flag the canceller sets after its
// `cancel`, which it reaches only when the cancel had no effect (cancel-var false). So the
// work that "passes" a cancellation point is none when cancellation is on, and all of it when
// it is off. Each check repeats ROUNDS times (cancelled regions in a row, then regions that
// must run normally: the runtime must leave no stale state behind).
#include <omp.h>
#include <sched.h>
#include <stdio.h>

#define ROUNDS 20
#define N 64

static int failures;
static int on;  // cancel-var

static void check(const char *what, int ok) {
    if (!ok) {
        failures++;
        printf("FAIL: %s\n", what);
    }
}

#define PRAGMA(x) _Pragma(#x)
// Waits for the flag `*done` at a cancellation point of `kind` (yielding: with more threads
// than CPUs the thread to wait for may need this one's CPU).
#define WAIT_AT(kind, done)                                 \
    for (;;) {                                              \
        PRAGMA(omp cancellation point kind)                 \
        if (__atomic_load_n(done, __ATOMIC_ACQUIRE)) break; \
        sched_yield();                                      \
    }

static int parallel_cancel(void) {
    int done = 0, passed = 0, nthreads = 0;
#pragma omp parallel shared(done, passed, nthreads)
    {
        if (omp_get_thread_num() == 0) {
            nthreads = omp_get_num_threads();
#pragma omp cancel parallel
            __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
        }
        WAIT_AT(parallel, &done);
        __atomic_add_fetch(&passed, 1, __ATOMIC_RELAXED);
    }
    return passed == (on ? 0 : nthreads);
}

// The other threads wait in a (cancellable) barrier that thread 0 never reaches when it
// cancels.
static int parallel_cancel_at_barrier(void) {
    int passed = 0, nthreads = 0;
#pragma omp parallel shared(passed, nthreads)
    {
        if (omp_get_thread_num() == 0) {
            nthreads = omp_get_num_threads();
#pragma omp cancel parallel
        }
#pragma omp barrier
        __atomic_add_fetch(&passed, 1, __ATOMIC_RELAXED);
    }
    return passed == (on ? 0 : nthreads);
}

// Thread 0 defers tasks, then cancels the region: tasks that have not started are discarded
// (the other threads only wait at cancellation points, which are not task scheduling points).
static int parallel_cancel_discards_tasks(void) {
    int done = 0, ran = 0, nthreads = 0;
#pragma omp parallel shared(done, ran, nthreads)
    {
        if (omp_get_thread_num() == 0) {
            nthreads = omp_get_num_threads();
            for (int i = 0; i < 40; i++) {
#pragma omp task shared(ran)
                __atomic_add_fetch(&ran, 1, __ATOMIC_RELAXED);
            }
#pragma omp cancel parallel
            __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
        }
        WAIT_AT(parallel, &done);
    }
    // A team of one may run its tasks at once (undeferred, before the cancel) or defer them:
    // the specification leaves it to the implementation.
    if (on && nthreads == 1) return ran == 0 || ran == 40;
    return ran == (on ? 0 : 40);
}

// A region that must run normally after cancelled ones: barriers, a loop, tasks.
static int normal_region(void) {
    int sum = 0, tasks = 0;
#pragma omp parallel shared(sum, tasks)
    {
        for (int b = 0; b < 5; b++) {
#pragma omp barrier
        }
#pragma omp for reduction(+ : sum)
        for (int i = 0; i < N; i++) sum += i;
#pragma omp single
        for (int i = 0; i < 10; i++) {
#pragma omp task shared(tasks)
            __atomic_add_fetch(&tasks, 1, __ATOMIC_RELAXED);
        }
    }
    return sum == N * (N - 1) / 2 && tasks == 10;
}

// Iteration 0 cancels the loop; every other iteration waits. Then, in the same region, a
// second loop whose cancellation points must not see the first one's cancellation.
#define LOOP_CANCEL(name, schedule_clause)                                             \
    static int name(void) {                                                            \
        int done = 0, passed = 0, after = 0, second = 0, nthreads = 0;                 \
        _Pragma("omp parallel shared(done, passed, after, second, nthreads)") {        \
            _Pragma("omp single") nthreads = omp_get_num_threads();                    \
            _Pragma(schedule_clause) for (int i = 0; i < N; i++) {                     \
                if (i == 0) {                                                          \
                    _Pragma("omp cancel for");                                         \
                    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);                      \
                } else {                                                               \
                    WAIT_AT(for, &done);                                               \
                }                                                                      \
                __atomic_add_fetch(&passed, 1, __ATOMIC_RELAXED);                      \
            }                                                                          \
            __atomic_add_fetch(&after, 1, __ATOMIC_RELAXED);                           \
            _Pragma(schedule_clause) for (int i = 0; i < N; i++) {                     \
                _Pragma("omp cancellation point for");                                 \
                __atomic_add_fetch(&second, 1, __ATOMIC_RELAXED);                      \
            }                                                                          \
        }                                                                              \
        return passed == (on ? 0 : N) && after == nthreads && second == N;             \
    }
LOOP_CANCEL(for_static_cancel, "omp for schedule(static)")
LOOP_CANCEL(for_static1_cancel, "omp for schedule(static, 1)")
LOOP_CANCEL(for_dynamic_cancel, "omp for schedule(dynamic)")
LOOP_CANCEL(for_guided_cancel, "omp for schedule(guided, 2)")

// `cancel for if(0)` is only a cancellation point: the loop runs whole.
static int for_cancel_if_false(void) {
    int count = 0;
#pragma omp parallel shared(count)
    {
#pragma omp for schedule(dynamic)
        for (int i = 0; i < N; i++) {
            int no = i < 0;
#pragma omp cancel for if (no)
            __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED);
        }
    }
    return count == N;
}

// A combined `parallel for` (its loop ends the region, without a barrier).
static int parallel_for_cancel(void) {
    int done = 0, passed = 0;
#pragma omp parallel for schedule(dynamic) shared(done, passed)
    for (int i = 0; i < N; i++) {
        if (i == 0) {
#pragma omp cancel for
            __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
        } else {
            WAIT_AT(for, &done);
        }
        __atomic_add_fetch(&passed, 1, __ATOMIC_RELAXED);
    }
    return passed == (on ? 0 : N);
}

// The first section cancels; the others wait. Sections not started never run.
static int sections_cancel(void) {
    int done = 0, passed = 0, after = 0, nthreads = 0;
#pragma omp parallel shared(done, passed, after, nthreads)
    {
#pragma omp single
        nthreads = omp_get_num_threads();
#pragma omp sections
        {
#pragma omp section
            {
#pragma omp cancel sections
                __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
                __atomic_add_fetch(&passed, 1, __ATOMIC_RELAXED);
            }
#pragma omp section
            {
                WAIT_AT(sections, &done);
                __atomic_add_fetch(&passed, 1, __ATOMIC_RELAXED);
            }
#pragma omp section
            {
                WAIT_AT(sections, &done);
                __atomic_add_fetch(&passed, 1, __ATOMIC_RELAXED);
            }
#pragma omp section
            {
                WAIT_AT(sections, &done);
                __atomic_add_fetch(&passed, 1, __ATOMIC_RELAXED);
            }
        }
        __atomic_add_fetch(&after, 1, __ATOMIC_RELAXED);
    }
    return passed == (on ? 0 : 4) && after == nthreads;
}

// Tasks that wait (deferred: only in a team of more than one, where they start or not),
// then an undeferred task that cancels the taskgroup, then tasks created after the cancel,
// which are discarded. A taskgroup after it runs its tasks.
static int taskgroup_cancel(void) {
    int done = 0, passed = 0, later = 0, waiting = 0;
#pragma omp parallel shared(done, passed, later, waiting)
#pragma omp single
    {
        waiting = omp_get_num_threads() > 1 ? 3 : 0;
#pragma omp taskgroup
        {
            for (int i = 0; i < waiting; i++) {
#pragma omp task shared(done, passed)
                {
                    WAIT_AT(taskgroup, &done);
                    __atomic_add_fetch(&passed, 1, __ATOMIC_RELAXED);
                }
            }
#pragma omp task if (0) shared(done, passed)
            {
#pragma omp cancel taskgroup
                __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
                __atomic_add_fetch(&passed, 1, __ATOMIC_RELAXED);
            }
            for (int i = 0; i < 3; i++) {
#pragma omp task shared(passed)
                __atomic_add_fetch(&passed, 1, __ATOMIC_RELAXED);
            }
        }
#pragma omp taskgroup
        for (int i = 0; i < 5; i++) {
#pragma omp task shared(later)
            __atomic_add_fetch(&later, 1, __ATOMIC_RELAXED);
        }
    }
    return passed == (on ? 0 : waiting + 4) && later == 5;
}

// An orphaned loop outside any region: `cancel for` ends it for the one thread.
static int orphaned_cancel(void) {
    int count = 0;
#pragma omp for schedule(dynamic)
    for (int i = 0; i < N; i++) {
        if (i == 3) {
#pragma omp cancel for
        }
        count++;
    }
    return count == (on ? 3 : N);
}

// `cancel taskgroup` outside any parallel region: libgomp makes no taskgroup without a team,
// so nothing is cancelled and the group's later tasks run, undeferred or not; the cancelling
// task still skips the rest of its code. Prints what ran (compared with the native run).
static void taskgroup_cancel_outside_regions(void) {
    int rest = 0, later = 0, included = 0;
#pragma omp taskgroup
    {
#pragma omp task if (0) shared(rest)
        {
#pragma omp cancel taskgroup
            rest++;
        }
#pragma omp task shared(later)
        later++;
#pragma omp task if (0) shared(included)
        included++;
    }
    printf("cancel taskgroup outside regions: rest of the task %d, later task %d, included task %d\n", rest,
           later, included);
}

int main(void) {
    on = omp_get_cancellation();
    printf("cancellation %d\n", on);
    taskgroup_cancel_outside_regions();
    struct {
        const char *name;
        int (*f)(void);
    } checks[] = {
        {"cancel parallel", parallel_cancel},
        {"cancel parallel, others at a barrier", parallel_cancel_at_barrier},
        {"cancel parallel discards deferred tasks", parallel_cancel_discards_tasks},
        {"a region after cancelled ones", normal_region},
        {"cancel for, static", for_static_cancel},
        {"cancel for, static 1", for_static1_cancel},
        {"cancel for, dynamic", for_dynamic_cancel},
        {"cancel for, guided", for_guided_cancel},
        {"cancel for if(0)", for_cancel_if_false},
        {"cancel for in parallel for", parallel_for_cancel},
        {"cancel sections", sections_cancel},
        {"cancel taskgroup", taskgroup_cancel},
        {"orphaned cancel for", orphaned_cancel},
    };
    for (unsigned c = 0; c < sizeof checks / sizeof checks[0]; c++) {
        int ok = 1;
        for (int r = 0; r < ROUNDS; r++) ok &= checks[c].f() && normal_region();
        printf("%s: %s\n", checks[c].name, ok ? "ok" : "wrong");
        fflush(stdout);
        check(checks[c].name, ok);
    }
    if (failures == 0) printf("all checks passed\n");
    return failures != 0;
}
