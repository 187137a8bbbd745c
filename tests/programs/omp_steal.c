// Nonmonotonic dynamic loops whose chunks a runtime may hand out in any order (the kernel's
// runtime steals them between threads): whatever the order, every iteration runs exactly
// once, `lastprivate` and `linear` values are those of the loop's last iteration (gcc copies
// them out in the thread whose last chunk ended the loop), the loop variable ends past the
// end, `monotonic:` loops (also through schedule(runtime) and omp_set_schedule) still give
// each thread its chunks in increasing order, and loops after a `cancel for` run normally.
// Team sizes from 1 to 7, loops smaller than the team, empty loops, negative steps,
// unsigned long long loops, collapse(2), back-to-back nowait loops (more than a runtime's ring
// of work shares), nested teams and task reductions (GOMP_loop_start). Work grows toward the
// loop's end, so the threads with the early chunks run dry first and take the others'.
// Output depends only on the loops, never on which thread ran what.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static int *count;  // per iteration index: how many times it ran

static void fail(const char *what, long a, long b) {
    if (failures++ < 20) printf("FAIL %s: %ld %ld\n", what, a, b);
}

// Busy work that costs more for late iterations (idx near n): the last threads' chunks.
static long work(long idx, long n) {
    volatile long x = idx;
    long rounds = n > 0 && idx * 4 >= n * 3 ? 400 : 10;
    for (long k = 0; k < rounds; k++) x = x * 3 + 1;
    return idx;
}

static void begin(long n) { memset(count, 0, sizeof *count * (size_t)(n > 0 ? n : 1)); }

// Every index of 0..n ran exactly once.
static long missing(long n) {
    long bad = 0;
    for (long i = 0; i < n; i++) bad += count[i] != 1;
    return bad;
}

static void ran(long idx, long n) {
    __atomic_fetch_add(&count[idx], 1, __ATOMIC_RELAXED);
    work(idx, n);
}

// `schedule(dynamic, c)` over long, with lastprivate of a value and of the loop variable.
static void long_up(int nth, long n, long c) {
    long x = -1, i = -1;
    begin(n);
#pragma omp parallel num_threads(nth)
    {
        if (c == 1) {
#pragma omp for schedule(dynamic) lastprivate(x, i)
            for (i = 0; i < n; i++) {
                ran(i, n);
                x = i * 3 + 1;
            }
        } else {
#pragma omp for schedule(dynamic, c) lastprivate(x, i)
            for (i = 0; i < n; i++) {
                ran(i, n);
                x = i * 3 + 1;
            }
        }
    }
    long bad = missing(n);
    if (bad) fail("long: iterations not run once", bad, n);
    // With no iteration, lastprivate leaves the original values.
    if (n > 0 && (x != (n - 1) * 3 + 1 || i != n)) fail("long: lastprivate", x, i);
}

// long counting down by 5 across zero, lastprivate.
static void long_down(int nth, long n, long c) {
    long x = -1;
    long start = 5 * n - 17;
    begin(n);
#pragma omp parallel num_threads(nth)
    {
#pragma omp for schedule(nonmonotonic : dynamic, c) lastprivate(x)
        for (long i = start; i > -17; i -= 5) {
            ran((start - i) / 5, n);
            x = i;
        }
    }
    long bad = missing(n);
    if (bad) fail("long-down: iterations not run once", bad, n);
    if (n > 0 && x != start - 5 * (n - 1)) fail("long-down: lastprivate", x, n);
}

// unsigned long long near the top of the range (gcc then calls the ull entry points).
static volatile unsigned long long top = ~0ULL - 2;
static void ull_up(int nth, long n, long c) {
    unsigned long long x = 7;
    unsigned long long end = top, start = end - 3 * (unsigned long long)n;
    begin(n);
#pragma omp parallel num_threads(nth)
    {
#pragma omp for schedule(dynamic, c) lastprivate(x)
        for (unsigned long long i = start; i < end; i += 3) {
            ran((long)((i - start) / 3), n);
            x = i;
        }
    }
    long bad = missing(n);
    if (bad) fail("ull: iterations not run once", bad, n);
    if (n > 0 && x != end - 3) fail("ull: lastprivate", (long)(end - x), n);
}

// collapse(2) of an a x b nest with lastprivate of both variables.
static void collapsed(int nth, long a, long b) {
    long i = -1, j = -1, x = -1;
    long n = a * b;
    begin(n);
#pragma omp parallel num_threads(nth)
    {
#pragma omp for collapse(2) schedule(dynamic, 2) lastprivate(i, j, x)
        for (i = 0; i < a; i++)
            for (j = 0; j < b; j++) {
                ran(i * b + j, n);
                x = i * 1000 + j;
            }
    }
    long bad = missing(n);
    if (bad) fail("collapse: iterations not run once", bad, n);
    if (n > 0 && (i != a || j != b || x != (a - 1) * 1000 + b - 1)) fail("collapse: lastprivate", x, i * 1000 + j);
}

// linear(j:2), the body stepping j as the clause says: j is its start plus 2 per logical
// iteration inside (gcc sets it at each chunk's start), and after the loop.
static void linear(int nth, long n) {
    long j = 100;
    long wrong = 0;
    begin(n);
#pragma omp parallel num_threads(nth) reduction(+ : wrong)
    {
#pragma omp for schedule(dynamic, 3) linear(j : 2)
        for (long i = 0; i < n; i++) {
            ran(i, n);
            wrong += j != 100 + 2 * i;
            j += 2;
        }
    }
    long bad = missing(n);
    if (bad) fail("linear: iterations not run once", bad, n);
    if (wrong) fail("linear: value inside", wrong, n);
    if (j != 100 + 2 * n) fail("linear: value after", j, n);
}

// schedule(runtime) with run-sched-var set by omp_set_schedule: lastprivate always, and with
// `monotonic` each thread's chunks in increasing order.
static void runtime(int nth, long n, int chunk, int mono) {
    long x = -1;
    long backwards = 0;
    omp_set_schedule(mono ? (omp_sched_t)(omp_sched_dynamic | omp_sched_monotonic) : omp_sched_dynamic, chunk);
    begin(n);
#pragma omp parallel num_threads(nth) reduction(+ : backwards)
    {
        long last = -1;
#pragma omp for schedule(runtime) lastprivate(x)
        for (long i = 0; i < n; i++) {
            ran(i, n);
            backwards += i <= last;
            last = i;
            x = -i;
        }
    }
    long bad = missing(n);
    if (bad) fail("runtime: iterations not run once", bad, n);
    if (n > 0 && x != -(n - 1)) fail("runtime: lastprivate", x, n);
    if (mono && backwards) fail("runtime monotonic: chunks out of order", backwards, n);
}

// A task reduction on the loop (gcc calls GOMP_loop_start with the schedule as an argument).
static void task_reduction(int nth, long n) {
    long x = -1, sum = 0;
    begin(n);
#pragma omp parallel num_threads(nth)
    {
#pragma omp for schedule(dynamic, 2) reduction(task, + : sum) lastprivate(x)
        for (long i = 0; i < n; i++) {
            ran(i, n);
            sum += i;
            x = i;
        }
    }
    long bad = missing(n);
    if (bad) fail("task reduction: iterations not run once", bad, n);
    if (sum != n * (n - 1) / 2 || (n > 0 && x != n - 1)) fail("task reduction: sum, lastprivate", sum, x);
}

// 20 nowait loops in a row (sizes and chunks changing), then a barrier; each loop's
// iterations once, and no thread runs an iteration after the loop's final one (what gcc's
// lastprivate copy-out relies on).
static void nowait_loops(int nth) {
    enum { LOOPS = 20, MAXN = 300 };
    static int counts[LOOPS][MAXN];
    long after_final = 0;
    memset(counts, 0, sizeof counts);
#pragma omp parallel num_threads(nth) reduction(+ : after_final)
    {
        for (int k = 0; k < LOOPS; k++) {
            long n = (k * 37) % MAXN;
            int c = 1 + k % 5, had_final = 0;
#pragma omp for schedule(dynamic, c) nowait
            for (long i = 0; i < n; i++) {
                __atomic_fetch_add(&counts[k][i], 1, __ATOMIC_RELAXED);
                work(i, n);
                after_final += had_final;
                had_final |= i == n - 1;
            }
        }
    }
    long bad = 0;
    for (int k = 0; k < LOOPS; k++) {
        long n = (k * 37) % MAXN;
        for (long i = 0; i < MAXN; i++) bad += counts[k][i] != (i < n);
    }
    if (bad) fail("nowait: iterations not run once", bad, nth);
    if (after_final) fail("nowait: iterations after the final one", after_final, nth);
}

// `cancel for` in a dynamic loop (with OMP_CANCELLATION=true the loop ends early, leaving
// chunks unrun in the threads' hands), then 12 loops that must each run in full.
static void after_cancel(int nth) {
    static int counts[12][200];
    memset(counts, 0, sizeof counts);
#pragma omp parallel num_threads(nth)
    {
#pragma omp for schedule(dynamic)
        for (long i = 0; i < 1000; i++) {
            if (i == 10) {
#pragma omp cancel for
            }
            work(i, 1000);
        }
        for (int k = 0; k < 12; k++) {
#pragma omp for schedule(dynamic, 1 + k % 3)
            for (long i = 0; i < 200; i++) __atomic_fetch_add(&counts[k][i], 1, __ATOMIC_RELAXED);
        }
    }
    long bad = 0;
    for (int k = 0; k < 12; k++)
        for (int i = 0; i < 200; i++) bad += counts[k][i] != 1;
    if (bad) fail("after cancel: iterations not run once", bad, nth);
}

// Nested teams: each thread of an outer dynamic loop starts an inner team with its own
// dynamic loop and lastprivate.
static void nested(void) {
    enum { OUTER = 12, INNER = 97 };
    static int inner[OUTER][INNER];
    long lasts[OUTER];
    memset(inner, 0, sizeof inner);
    int levels = omp_get_max_active_levels();
    omp_set_max_active_levels(2);
#pragma omp parallel for schedule(dynamic) num_threads(3)
    for (int o = 0; o < OUTER; o++) {
        long x = -1;
#pragma omp parallel for schedule(dynamic, 4) num_threads(2 + o % 3) lastprivate(x)
        for (long i = 0; i < INNER; i++) {
            __atomic_fetch_add(&inner[o][i], 1, __ATOMIC_RELAXED);
            work(i, INNER);
            x = o * 1000 + i;
        }
        lasts[o] = x;
    }
    omp_set_max_active_levels(levels);
    long bad = 0;
    for (int o = 0; o < OUTER; o++) {
        for (int i = 0; i < INNER; i++) bad += inner[o][i] != 1;
        if (lasts[o] != o * 1000 + INNER - 1) fail("nested: lastprivate", o, lasts[o]);
    }
    if (bad) fail("nested: iterations not run once", bad, 0);
}

// Combined constructs with constant bounds (GOMP_parallel_loop_nonmonotonic_dynamic and
// GOMP_parallel_loop_maybe_nonmonotonic_runtime).
static void combined(void) {
    static int c1[777], c2[777];
    memset(c1, 0, sizeof c1);
    memset(c2, 0, sizeof c2);
#pragma omp parallel for schedule(dynamic, 5)
    for (long i = 0; i < 777; i++) {
        __atomic_fetch_add(&c1[i], 1, __ATOMIC_RELAXED);
        work(i, 777);
    }
    omp_set_schedule(omp_sched_dynamic, 2);
#pragma omp parallel for schedule(runtime)
    for (long i = 0; i < 777; i++) {
        __atomic_fetch_add(&c2[i], 1, __ATOMIC_RELAXED);
        work(i, 777);
    }
    long bad = 0;
    for (int i = 0; i < 777; i++) bad += (c1[i] != 1) + (c2[i] != 1);
    if (bad) fail("combined: iterations not run once", bad, 0);
}

int main(void) {
    count = calloc(100000, sizeof *count);
    static const long sizes[] = {0, 1, 2, 3, 4, 5, 7, 8, 63, 64, 65, 1000, 4099};
    static const long chunks[] = {1, 2, 3, 8, 64};
    const int nsizes = sizeof sizes / sizeof *sizes, nchunks = sizeof chunks / sizeof *chunks;
    // Team sizes: the program's default (OMP_NUM_THREADS), then 1 to 7.
    for (int nth = 0; nth <= 7; nth++) {
        int before = failures;
        for (int s = 0; s < nsizes; s++) {
            for (int k = 0; k < nchunks; k++) {
                long_up(nth ? nth : omp_get_max_threads(), sizes[s], chunks[k]);
                long_down(nth ? nth : omp_get_max_threads(), sizes[s], chunks[k]);
                ull_up(nth ? nth : omp_get_max_threads(), sizes[s], chunks[k]);
            }
            linear(nth ? nth : omp_get_max_threads(), sizes[s]);
            task_reduction(nth ? nth : omp_get_max_threads(), sizes[s]);
            runtime(nth ? nth : omp_get_max_threads(), sizes[s], 1 + s % 4, 0);
            runtime(nth ? nth : omp_get_max_threads(), sizes[s], 1 + s % 4, 1);
        }
        collapsed(nth ? nth : omp_get_max_threads(), 13, 7);
        collapsed(nth ? nth : omp_get_max_threads(), 1, 3);
        nowait_loops(nth ? nth : omp_get_max_threads());
        after_cancel(nth ? nth : omp_get_max_threads());
        printf("team size %s: %s\n", nth ? (char[]){(char)('0' + nth), 0} : "default",
               failures == before ? "ok" : "WRONG");
    }
    nested();
    combined();
    printf("nested and combined: %s\n", failures ? "WRONG" : "ok");
    if (failures) {
        printf("%d failures\n", failures);
        return 1;
    }
    printf("all checks passed\n");
    return 0;
}
