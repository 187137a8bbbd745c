// Dynamic loops: nonmonotonic ones (`schedule(dynamic[,c])`, which gcc 12 hands to
// GOMP_loop_nonmonotonic_dynamic_*, GOMP_parallel_loop_nonmonotonic_dynamic and GOMP_loop_start)
// run every iteration exactly once, in chunks that start at multiples of the chunk size from
// the loop's start, for int, long (negative step) and unsigned long long loops, empty and tiny
// loops, imbalanced work (where a runtime may steal chunks), team sizes that change between
// regions and back-to-back nowait loops; and `schedule(monotonic:dynamic)` still hands each
// thread its chunks in increasing order. Output depends only on the loops, never on which
// thread ran what. (Written for the static-steal schedule of branch `steal`.)
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXT 64

static int failures;
static unsigned char *seen;
// Per thread (padded): the index of the last iteration it ran, -2 before any.
static struct {
    long last;
    long pad[15];
} mine[MAXT];

static void fail(const char *what, long a, long b) {
    if (failures++ < 10) printf("FAIL %s: %ld %ld\n", what, a, b);
}

// Records that iteration index `idx` (0-based, in loop order) of a loop with chunk `c` ran
// on this thread: each index once, and a chunk start (an index not following the thread's
// previous one) only at a multiple of the chunk size.
static void ran(long idx, long c) {
    int t = omp_get_thread_num();
    if (t >= MAXT) {
        fail("thread number", t, MAXT);
        return;
    }
    if (__atomic_fetch_add(&seen[idx], 1, __ATOMIC_RELAXED) != 0) fail("ran twice", idx, c);
    if (idx != mine[t].last + 1 && idx % c != 0) fail("chunk starts off a multiple", idx, c);
    mine[t].last = idx;
}

static void begin(long n) {
    memset(seen, 0, n > 0 ? n : 1);
    for (int t = 0; t < MAXT; t++) mine[t].last = -2;
}

// Every index of 0..n ran once; prints the loop's line.
static void finish(const char *name, long n, long c, unsigned long long sum) {
    long missing = 0;
    for (long i = 0; i < n; i++) missing += seen[i] != 1;
    if (missing) fail(name, missing, n);
    printf("%s n=%ld chunk=%ld sum=%llu %s\n", name, n, c, sum, missing ? "MISSING" : "ok");
}

// Work that grows with i: the last threads' blocks cost the most, so the others steal.
static unsigned long long work(long i, long scale) {
    volatile unsigned long long x = i;
    for (long k = 0; k < i * scale; k++) x = x * 6364136223846793005ULL + 1;
    return i;
}

#define PRAGMA(x) _Pragma(#x)

// One dynamic loop over `for (TYPE i = START; COND; STEP)`, index IDX, chunk C (SCHED: the
// schedule clause): without a task reduction (GOMP_loop_*nonmonotonic_dynamic_start, which
// static libgomp aliases to the monotonic entry point) and, with `task`, with one (gcc then
// calls GOMP_loop_start or GOMP_loop_ull_start with the schedule as an argument: 2, not
// monotonic). Adds each iteration's value and its work to `sum`, its index to `tsum`.
#define DYN_BODY(C, IDX)                                                                         \
    {                                                                                            \
        long idx = (long)(IDX);                                                                  \
        ran(idx, C);                                                                             \
        sum += work(idx, scale) + (unsigned long long)i;                                         \
        tsum += idx;                                                                             \
    }
#define DYN_LOOP(SCHED, C, TYPE, START, COND, STEP, IDX)                                         \
    if (task) {                                                                                  \
        PRAGMA(omp for SCHED reduction(task, + : tsum))                                          \
        for (TYPE i = START; COND; STEP) DYN_BODY(C, IDX)                                        \
    } else {                                                                                     \
        PRAGMA(omp for SCHED reduction(+ : tsum))                                                \
        for (TYPE i = START; COND; STEP) DYN_BODY(C, IDX)                                        \
    }

static void report(const char *name, int task, long n, long c, unsigned long long sum, long tsum) {
    char full[64];
    snprintf(full, sizeof full, "%s%s", name, task ? "+task-reduction" : "");
    if (tsum != n * (n - 1) / 2) fail("index sum", tsum, n);
    finish(full, n, c, sum);
}

static void int_loop(int n, int c, long scale, int task) {
    unsigned long long sum = 0;
    long tsum = 0;
    begin(n);
#pragma omp parallel reduction(+ : sum)
    {
        if (c == 1) {
            DYN_LOOP(schedule(dynamic), 1, int, 0, i < n, i++, i)
        } else if (c == 3) {
            DYN_LOOP(schedule(dynamic, 3), 3, int, 0, i < n, i++, i)
        } else {
            DYN_LOOP(schedule(nonmonotonic : dynamic, 64), 64, int, 0, i < n, i++, i)
        }
    }
    report("int", task, n, c, sum, tsum);
}

// long, counting down by 7 from a positive start past zero.
static void long_loop(long n, long scale, int task) {
    unsigned long long sum = 0;
    long tsum = 0;
    long start = 7 * n - 40;
    begin(n);
#pragma omp parallel reduction(+ : sum)
    { DYN_LOOP(schedule(dynamic, 3), 3, long, start, i > -40, i -= 7, (start - i) / 7) }
    report("long-down", task, n, 3, sum, tsum);
}

// The top of the unsigned long long range (volatile: gcc keeps the ull entry points only for
// bounds it cannot prove fit a long).
static volatile unsigned long long top = ~0ULL - 3;

// unsigned long long, near the top of the range.
static void ull_loop(long n, long c, long scale, int task) {
    unsigned long long sum = 0;
    long tsum = 0;
    unsigned long long end = top;
    unsigned long long start = end - 5 * (unsigned long long)n;
    begin(n);
#pragma omp parallel reduction(+ : sum)
    {
        if (c == 1) {
            DYN_LOOP(schedule(dynamic), 1, unsigned long long, start, i < end, i += 5, (i - start) / 5)
        } else {
            DYN_LOOP(schedule(dynamic, 64), 64, unsigned long long, start, i < end, i += 5, (i - start) / 5)
        }
    }
    report("ull", task, n, c, sum, tsum);
}

// The combined construct (GOMP_parallel_loop_nonmonotonic_dynamic: constant bounds, no
// reduction clause), with imbalanced work.
static void combined_loop(void) {
    unsigned long long sum = 0;
    begin(1000);
#pragma omp parallel for schedule(dynamic, 3)
    for (long i = 0; i < 1000; i++) {
        ran(i, 3);
        __atomic_fetch_add(&sum, work(i, 20), __ATOMIC_RELAXED);
    }
    finish("combined", 1000, 3, sum);
}

// Regions run many times, team sizes changing, three nowait loops in a row each time.
static void repeated(void) {
    static unsigned char counts[3][500];
    memset(counts, 0, sizeof counts);
    for (int r = 0; r < 300; r++) {
        int nth = 1 + r % 4;
#pragma omp parallel num_threads(nth)
        {
#pragma omp for schedule(dynamic) nowait
            for (int i = 0; i < 500; i++) __atomic_fetch_add(&counts[0][i], 1, __ATOMIC_RELAXED);
#pragma omp for schedule(dynamic, 7) nowait
            for (int i = 0; i < 500; i++) __atomic_fetch_add(&counts[1][i], 1, __ATOMIC_RELAXED);
#pragma omp for schedule(dynamic, 64) nowait
            for (int i = r % 3; i < 500; i++) __atomic_fetch_add(&counts[2][i], 1, __ATOMIC_RELAXED);
        }
    }
    long bad = 0;
    for (int i = 0; i < 500; i++) {
        bad += counts[0][i] != 300 % 256 || counts[1][i] != 300 % 256;
        bad += counts[2][i] != (i == 0 ? 100 : i == 1 ? 200 : 300) % 256;
    }
    if (bad) fail("repeated", bad, 0);
    printf("repeated nowait loops: %s\n", bad ? "WRONG" : "ok");
}

// An orphaned loop outside any region (a team of one).
static void orphaned(long n) {
    unsigned long long sum = 0;
    begin(n);
#pragma omp for schedule(dynamic, 3)
    for (long i = 0; i < n; i++) { ran(i, 3); sum += i; }
    finish("orphaned", n, 3, sum);
}

// monotonic:dynamic: each thread's chunks come in increasing order.
static void monotonic(long n, long c) {
    long backwards = 0;
    begin(n);
#pragma omp parallel reduction(+ : backwards)
    {
        long last = -1;
#pragma omp for schedule(monotonic : dynamic, 3)
        for (long i = 0; i < n; i++) {
            ran(i, 3);
            backwards += i <= last;
            last = i;
            work(i % 50, 2);
        }
    }
    if (backwards) fail("monotonic chunks out of order", backwards, n);
    finish("monotonic", n, c, backwards);
}

// Loops nested in a dynamic loop's body: a combined `parallel for` (whose threads start with
// the loop entered), and a task whose region runs a dynamic loop (the runtime must come back
// to the outer loop's chunks after each, whichever thread ran the task), each iteration of
// every loop exactly once.
static void nested(void) {
    enum { OUTER = 40, INNER = 50 };
    static int outer_count[OUTER], inner_count[OUTER][INNER];
    memset(outer_count, 0, sizeof outer_count);
    memset(inner_count, 0, sizeof inner_count);
    int levels = omp_get_max_active_levels(), entered = 0;
    omp_set_max_active_levels(2);
#pragma omp parallel
    {
        // Not a combined `parallel for`: the threads enter the loop themselves.
        __atomic_fetch_add(&entered, 1, __ATOMIC_RELAXED);
#pragma omp for schedule(dynamic, 2)
        for (int i = 0; i < OUTER; i++) {
            __atomic_fetch_add(&outer_count[i], 1, __ATOMIC_RELAXED);
#pragma omp parallel for schedule(dynamic, 3) num_threads(2)
            for (int j = 0; j < INNER; j++) __atomic_fetch_add(&inner_count[i][j], 1, __ATOMIC_RELAXED);
#pragma omp task firstprivate(i)
            {
#pragma omp parallel num_threads(2)
                {
#pragma omp for schedule(dynamic, 1)
                    for (int j = 0; j < INNER; j++) __atomic_fetch_add(&inner_count[i][j], 1, __ATOMIC_RELAXED);
                }
            }
#pragma omp taskwait
        }
    }
    omp_set_max_active_levels(levels);
    long bad = 0;
    for (int i = 0; i < OUTER; i++) {
        bad += outer_count[i] != 1;
        for (int j = 0; j < INNER; j++) bad += inner_count[i][j] != 2;
    }
    if (bad) fail("nested", bad, 0);
    printf("loops nested in a dynamic loop: %s\n", bad ? "WRONG" : "ok");
}

int main(void) {
    seen = calloc(200000, 1);
    static const long sizes[] = {0, 1, 5, 1000, 100003};
    static const int chunks[] = {1, 3, 64};
    for (unsigned s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        long n = sizes[s];
        long scale = n <= 1000 ? 20 : 0;
        for (int task = 0; task < 2; task++) {
            for (unsigned k = 0; k < sizeof chunks / sizeof *chunks; k++) int_loop((int)n, chunks[k], scale, task);
            long_loop(n, scale, task);
            ull_loop(n, 1, scale, task);
            ull_loop(n, 64, scale, task);
        }
        orphaned(n);
        monotonic(n, 3);
    }
    combined_loop();
    repeated();
    nested();
    if (failures) {
        printf("%d failures\n", failures);
        return 1;
    }
    printf("all checks passed\n");
    return 0;
}
