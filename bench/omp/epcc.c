/* OpenMP construct overheads measured the way the EPCC microbenchmarks describe it (this is an
 * independent implementation, not EPCC's code):
 *
 *   - a delay loop (kept by an empty asm, not inlined so every caller runs the same instructions,
 *     calibrated to DELAY_US) is the unit of work;
 *   - the test is a fixed amount of work per thread executed inside the construct, `inner`
 *     times per sample, with `inner` doubled until one sample lasts at least the target time;
 *   - the reference is the same work without the construct, timed right before or after each
 *     test sample (in turn), so that each sample is a pair and a change of the host's speed
 *     between samples moves both of its halves alike;
 *   - overhead per construct (us) = (test sample - its reference) / inner, with
 *     min/median/max over the samples.
 *
 * Synchronisation rows: the reference is `inner` delays run bare by one thread, except for:
 *
 *   - critical and lock, whose test serialises inner delays over the team: the reference is
 *     the same team running its shares of the delays one thread after the other (a barrier
 *     between turns), in one parallel region per sample as the test has. With one thread's
 *     bare delays as reference, the overhead (0.005-0.1 us) also held the difference between
 *     the speed of the vCPU that ran the reference and of the team's, and the region's fork and
 *     join: medians of -0.002 to +0.24 us from one run to the next on the same side;
 *   - atomic, whose test has every thread run its inner delays side by side: the reference is
 *     the team doing the same without the atomic update (as the schedule rows' reference).
 *
 * These three rows cost 0.002-0.006 us (a few cycles beyond the delay) when the host keeps
 * this machine's vCPUs close, and take four times --samples: a median of 20 moved by 10-20 %
 * within one run, one of 100 by 5-10 % between runs.
 *
 * Every row also prints `xfer=A-B`: the round trip (ns) of a cache line between threads 0 and 1
 * of the team, best of ten batches of 100, measured right before (A) and after (B) the row.
 * The host moves this machine's vCPUs: the round trip is 60-140 ns at some times and
 * 340-420 ns at others, switching every few seconds to a minute, and the cheap rows follow it
 * (Linux's atomic 0.002 against 0.086 us, critical 0.005 against 0.09 us, barrier 0.19
 * against 0.45 us; every side alike).
 * `hrt bench` compares a round's Linux and HRT results only when both ran in the same state.
 *
 * Loop schedules (static, dynamic, guided; chunks 1, 8, 64) follow EPCC's schedbench: each
 * thread gets SCHED_ITERS iterations of the same delay per loop. The reference is every thread
 * running, at the same time, as many delays as it ran in the test (its share: SCHED_ITERS per
 * loop for static; for dynamic and guided what the hand-out gave it), in one parallel region
 * per sample as the test has, without the loop construct: the overhead is that of one
 * scheduled loop (its chunk hand-out and closing barrier), not a vCPU's speed against
 * another's. The work per loop
 * is kept small (64 x 0.1 us) so that the run-to-run jitter of the work, which grows with it,
 * stays well below the overhead being measured (with 128 x 0.25 us, 32 us of work against
 * overheads of 0.2-4 us, the medians were noise).
 *
 * Task rows (`epcc.task.*`) follow EPCC's taskbench: tasks created by every thread, by the
 * master alone (with the others idle or busy), undeferred (`if(0)`), each followed by a
 * taskwait or a barrier, nested one level (from every thread or the master), and binary trees
 * whose leaves do the work; `epcc.taskloop` (EPCC's schedbench TASKLOOP rows, shaped as a task
 * row): the master runs taskloops of one-delay tasks, 64 per thread each. Each gives every
 * thread `inner` delays of work in all, so the reference is `inner` bare delays and the
 * overhead is per task a thread runs.
 *
 * Usage: epcc [--quick] [--samples N] [--only PREFIX[,PREFIX...]] [--sched-delay US] [--sched-iters N]
 * threads: OMP_NUM_THREADS, as for any OpenMP program. `hrt bench` runs it in rounds with few
 * samples each, alternating with the other sides. */
#include <omp.h>

#include "../common/bench.h"

#define DELAY_US 0.1
#define SCHED_ITERS 64

/* Every variable the threads share has a 128-byte line of its own (the adjacent-line prefetcher
 * fetches 64-byte lines in pairs). The lock word and the atomic counter, which the constructs
 * write, shared one 64-byte line with the delay length and the thread count, which every
 * iteration reads, and with libgomp's unnamed-critical lock word, which the linker put right
 * after them: each construct then also paid for that line's transfer, the critical row on
 * libgomp only (the kernel's runtime keeps its lock word in a line of its own), and how much
 * depended on the layout gcc and the linker chose. */
#define LINE_ALONE __attribute__((aligned(128)))
typedef union {
    long v;
    char line[128];
} LINE_ALONE line_long;

static struct {
    long delay_sync, delay_sched; /* delay-loop lengths (iterations) */
    long sched_iters;             /* schedule rows: iterations per thread and loop */
    int nthreads;
} LINE_ALONE par = {.sched_iters = SCHED_ITERS};
static line_long atomic_counter;
static union {
    omp_lock_t v;
    char line[128];
} LINE_ALONE lock;

/* The sum stays in a register (the empty asm makes the compiler keep every addition): a
 * volatile stack variable made the delay's time depend on where its caller's frame was, and
 * the schedule rows, whose test and reference call it from different frames, moved by up to
 * 0.5 us per loop from one build to the next. */
__attribute__((noinline)) static void delay(long len) {
    long acc = 0;
    for (long i = 0; i < len; i++) {
        acc += i;
        __asm__ volatile("" : "+r"(acc));
    }
}

/* Loop length that makes delay() last `us` microseconds (best of a few timings). */
static long calibrate_delay(double us) {
    const long probe = 1000000;
    double best = 1e30;
    for (int k = 0; k < 5; k++) {
        double t0 = omp_get_wtime();
        delay(probe);
        double t = omp_get_wtime() - t0;
        if (t < best)
            best = t;
    }
    long len = (long)(us * 1e-6 / (best / probe));
    return len > 0 ? len : 1;
}

/* ---- the tests: each runs `inner` repetitions of its construct ---- */

static void ref_sync(long inner) {
    for (long j = 0; j < inner; j++)
        delay(par.delay_sync);
}

/* Critical and lock's reference: each thread runs its inner / nthreads delays in its turn. */
static void ref_turns(long inner) {
#pragma omp parallel
    {
        int me = omp_get_thread_num();
        for (int turn = 0; turn < par.nthreads; turn++) {
            if (turn == me)
                for (long j = 0; j < inner / par.nthreads; j++)
                    delay(par.delay_sync);
#pragma omp barrier
        }
    }
}

/* Atomic's reference: every thread runs inner delays, side by side. */
static void ref_team(long inner) {
#pragma omp parallel
    for (long j = 0; j < inner; j++)
        delay(par.delay_sync);
}

static void test_parallel(long inner) {
    for (long j = 0; j < inner; j++) {
#pragma omp parallel
        delay(par.delay_sync);
    }
}

static void test_for(long inner) {
#pragma omp parallel
    for (long j = 0; j < inner; j++) {
#pragma omp for
        for (int i = 0; i < par.nthreads; i++)
            delay(par.delay_sync);
    }
}

static void test_parallel_for(long inner) {
    for (long j = 0; j < inner; j++) {
#pragma omp parallel for
        for (int i = 0; i < par.nthreads; i++)
            delay(par.delay_sync);
    }
}

static void test_barrier(long inner) {
#pragma omp parallel
    for (long j = 0; j < inner; j++) {
        delay(par.delay_sync);
#pragma omp barrier
    }
}

static void test_single(long inner) {
#pragma omp parallel
    for (long j = 0; j < inner; j++) {
#pragma omp single
        delay(par.delay_sync);
    }
}

/* Critical and lock serialize the delay: inner / nthreads per thread makes inner in all. */
static void test_critical(long inner) {
#pragma omp parallel
    for (long j = 0; j < inner / par.nthreads; j++) {
#pragma omp critical
        delay(par.delay_sync);
    }
}

static void test_lock(long inner) {
#pragma omp parallel
    for (long j = 0; j < inner / par.nthreads; j++) {
        omp_set_lock(&lock.v);
        delay(par.delay_sync);
        omp_unset_lock(&lock.v);
    }
}

/* Every thread runs delay + atomic update inner times, side by side. */
static void test_atomic(long inner) {
#pragma omp parallel
    for (long j = 0; j < inner; j++) {
        delay(par.delay_sync);
#pragma omp atomic
        atomic_counter.v += 1;
    }
}

static void test_reduction(long inner) {
    for (long j = 0; j < inner; j++) {
        long sum = 0;
#pragma omp parallel reduction(+ : sum)
        {
            delay(par.delay_sync);
            sum += 1;
        }
        atomic_counter.v += sum;
    }
}

/* ---- explicit tasks (EPCC's taskbench): every test gives each thread `inner` delays of work
 * in all, run as tasks, so the reference is `inner` bare delays (ref_sync) and the overhead is
 * per task a thread runs ---- */

/* Every thread creates `inner` tasks. */
static void test_task_parallel(long inner) {
#pragma omp parallel
    for (long j = 0; j < inner; j++) {
#pragma omp task
        delay(par.delay_sync);
    }
}

/* The master creates all `inner * nthreads` tasks; the others only run them. */
static void test_task_master(long inner) {
#pragma omp parallel
#pragma omp master
    for (long j = 0; j < inner * par.nthreads; j++) {
#pragma omp task
        delay(par.delay_sync);
    }
}

/* The master creates `inner` tasks while the others run their `inner` delays themselves. */
static void test_task_master_busy(long inner) {
#pragma omp parallel
    {
        int me = omp_get_thread_num();
        for (long j = 0; j < inner; j++) {
            if (me == 0) {
#pragma omp task
                delay(par.delay_sync);
            } else {
                delay(par.delay_sync);
            }
        }
    }
}

/* A volatile false the compiler cannot fold into the `if` clause. */
static volatile int task_if_false;

/* Undeferred tasks (`if(0)`): the task's bookkeeping without a hand-over. */
static void test_task_conditional(long inner) {
#pragma omp parallel
    for (long j = 0; j < inner; j++) {
#pragma omp task if (task_if_false)
        delay(par.delay_sync);
    }
}

/* A task and a taskwait for it, `inner` times per thread. */
static void test_task_wait(long inner) {
#pragma omp parallel
    for (long j = 0; j < inner; j++) {
#pragma omp task
        delay(par.delay_sync);
#pragma omp taskwait
    }
}

/* A task per thread and a barrier (which runs the tasks), `inner` times. */
static void test_task_barrier(long inner) {
#pragma omp parallel
    for (long j = 0; j < inner; j++) {
#pragma omp task
        delay(par.delay_sync);
#pragma omp barrier
    }
}

/* Each thread creates `inner / nthreads` tasks, each of which creates nthreads tasks and waits
 * for them. */
static void test_task_nested(long inner) {
#pragma omp parallel
    for (long j = 0; j < inner / par.nthreads; j++) {
#pragma omp task
        {
            for (int i = 0; i < par.nthreads; i++) {
#pragma omp task
                delay(par.delay_sync);
            }
#pragma omp taskwait
        }
    }
}

/* The master creates `inner` tasks, each of which creates nthreads tasks and waits for them. */
static void test_task_nested_master(long inner) {
#pragma omp parallel
#pragma omp master
    for (long j = 0; j < inner; j++) {
#pragma omp task
        {
            for (int i = 0; i < par.nthreads; i++) {
#pragma omp task
                delay(par.delay_sync);
            }
#pragma omp taskwait
        }
    }
}

#define TREE_DEPTH 6

/* A binary tree of tasks of depth `level`, whose leaves do the work. */
static void leaf_tree(int level) {
    if (level == 0) {
        delay(par.delay_sync);
        return;
    }
#pragma omp task
    {
        leaf_tree(level - 1);
        leaf_tree(level - 1);
    }
}

/* Each thread grows `inner >> TREE_DEPTH` trees of 2^TREE_DEPTH leaves (`inner` is a
 * multiple of 64 once doubled to the sample time, see measure). */
static void test_task_leaf_tree(long inner) {
#pragma omp parallel
    for (long j = 0; j < inner >> TREE_DEPTH; j++)
        leaf_tree(TREE_DEPTH);
}

/* The master runs `inner / 64` taskloops of 64 one-iteration tasks per thread (grainsize 1):
 * every task is deferred (libgomp runs a taskloop at once only beyond 64 pending tasks per
 * thread), and the other threads, done with their part of the region, run them. */
static void test_taskloop(long inner) {
#pragma omp parallel
#pragma omp master
    for (long j = 0; j < inner >> 6; j++) {
#pragma omp taskloop grainsize(1)
        for (long i = 0; i < 64L * par.nthreads; i++)
            delay(par.delay_sync);
    }
}

/* How many iterations each thread ran in the last test sample of a schedule row (its share),
 * and that sample's `inner`. A dynamic or guided loop gives the faster vCPU more iterations;
 * a reference of equal shares left the slower one running alone at its end, and the row then
 * measured how unequal the two vCPUs' speeds were (natively, guided.1's median was -2.06 us in
 * one run and +0.19 in the next, the construct's own cost a fraction of that). */
static line_long *sched_share;
static long sched_share_inner;

/* The schedule rows' reference: every thread runs the share of the work it ran in the test, at
 * the same time, in one parallel region per sample as the test has, but without the loop
 * construct (and so without its closing barriers). A static row's shares are equal. */
static void ref_sched(long inner) {
#pragma omp parallel
    {
        int me = omp_get_thread_num();
        long n = sched_share[me].v * inner / sched_share_inner;
        for (long k = 0; k < n; k++)
            delay(par.delay_sched);
    }
}

#define PRAGMA(x) _Pragma(#x)
#define SCHED_TEST(fn, kind, chunk)                                                           \
    static void fn(long inner) {                                                              \
        long iters = par.sched_iters * par.nthreads;                                          \
        PRAGMA(omp parallel) {                                                                \
            long mine = 0;                                                                    \
            for (long j = 0; j < inner; j++) {                                                \
                PRAGMA(omp for schedule(kind, chunk))                                         \
                for (long i = 0; i < iters; i++) {                                            \
                    delay(par.delay_sched);                                                   \
                    mine++;                                                                   \
                }                                                                             \
            }                                                                                 \
            sched_share[omp_get_thread_num()].v = mine;                                       \
        }                                                                                     \
        sched_share_inner = inner;                                                            \
    }
SCHED_TEST(test_static_1, static, 1)
SCHED_TEST(test_static_8, static, 8)
SCHED_TEST(test_static_64, static, 64)
SCHED_TEST(test_dynamic_1, dynamic, 1)
SCHED_TEST(test_dynamic_8, dynamic, 8)
SCHED_TEST(test_dynamic_64, dynamic, 64)
SCHED_TEST(test_guided_1, guided, 1)
SCHED_TEST(test_guided_8, guided, 8)
SCHED_TEST(test_guided_64, guided, 64)

struct test {
    const char *name;
    void (*run)(long inner);
    void (*ref)(long inner);
    int more; /* samples: this many times --samples (the cheap rows, see the top comment) */
};

static const struct test tests[] = {
    {"epcc.parallel", test_parallel, ref_sync, 1},
    {"epcc.for", test_for, ref_sync, 1},
    {"epcc.parallel_for", test_parallel_for, ref_sync, 1},
    {"epcc.barrier", test_barrier, ref_sync, 1},
    {"epcc.single", test_single, ref_sync, 1},
    {"epcc.critical", test_critical, ref_turns, 4},
    {"epcc.lock", test_lock, ref_turns, 4},
    {"epcc.atomic", test_atomic, ref_team, 4},
    {"epcc.reduction", test_reduction, ref_sync, 1},
    {"epcc.static.1", test_static_1, ref_sched, 1},
    {"epcc.static.8", test_static_8, ref_sched, 1},
    {"epcc.static.64", test_static_64, ref_sched, 1},
    {"epcc.dynamic.1", test_dynamic_1, ref_sched, 1},
    {"epcc.dynamic.8", test_dynamic_8, ref_sched, 1},
    {"epcc.dynamic.64", test_dynamic_64, ref_sched, 1},
    {"epcc.guided.1", test_guided_1, ref_sched, 1},
    {"epcc.guided.8", test_guided_8, ref_sched, 1},
    {"epcc.guided.64", test_guided_64, ref_sched, 1},
    {"epcc.task.parallel", test_task_parallel, ref_sync, 1},
    {"epcc.task.master", test_task_master, ref_sync, 1},
    {"epcc.task.master_busy", test_task_master_busy, ref_sync, 1},
    {"epcc.task.conditional", test_task_conditional, ref_sync, 1},
    {"epcc.task.wait", test_task_wait, ref_sync, 1},
    {"epcc.task.barrier", test_task_barrier, ref_sync, 1},
    {"epcc.task.nested", test_task_nested, ref_sync, 1},
    {"epcc.task.nested_master", test_task_nested_master, ref_sync, 1},
    {"epcc.task.leaf_tree", test_task_leaf_tree, ref_sync, 1},
    {"epcc.taskloop", test_taskloop, ref_sync, 1},
};

static double time_once(void (*fn)(long), long inner) {
    double t0 = omp_get_wtime();
    fn(inner);
    return omp_get_wtime() - t0;
}

static double best_of_5(void (*fn)(long), long inner) {
    double best = time_once(fn, inner);
    for (int k = 0; k < 4; k++) {
        double t = time_once(fn, inner);
        best = t < best ? t : best;
    }
    return best;
}

/* Round trip (ns) of a cache line between threads 0 and 1 (best of ten batches of 100, so a
 * thread descheduled now and then does not count), 0 for a team of one. The spin has no PAUSE:
 * the threads never outnumber the vCPUs in `hrt bench`. */
static line_long xfer_flag;

static double team_round_trip(void) {
    double best = 1e30;
    if (par.nthreads < 2)
        return 0;
#pragma omp parallel
    {
        int me = omp_get_thread_num();
        for (int b = 0; b < 10; b++) {
#pragma omp barrier
            long base = __atomic_load_n(&xfer_flag.v, __ATOMIC_ACQUIRE);
#pragma omp barrier
            if (me == 0) {
                double t0 = omp_get_wtime();
                for (long i = 0; i < 100; i++) {
                    __atomic_store_n(&xfer_flag.v, base + 2 * i + 1, __ATOMIC_RELEASE);
                    while (__atomic_load_n(&xfer_flag.v, __ATOMIC_ACQUIRE) != base + 2 * i + 2)
                        ;
                }
                double rt = (omp_get_wtime() - t0) / 100;
                best = rt < best ? rt : best;
            } else if (me == 1) {
                for (long i = 0; i < 100; i++) {
                    while (__atomic_load_n(&xfer_flag.v, __ATOMIC_ACQUIRE) != base + 2 * i + 1)
                        ;
                    __atomic_store_n(&xfer_flag.v, base + 2 * i + 2, __ATOMIC_RELEASE);
                }
            }
        }
    }
    return best * 1e9;
}

static void measure(const struct test *t, int samples, double target_s) {
    double xfer_before = team_round_trip();
    /* inner: a multiple of the thread count, doubled until one test sample lasts target_s (the best
     * of five timings, so that a thread descheduled now and then does not stop the doubling). */
    long inner = par.nthreads;
    t->run(inner); /* warm-up */
    while (best_of_5(t->run, inner) < target_s && inner < (1L << 30))
        inner *= 2;

    double *ref = bench_alloc(sizeof(double) * samples);
    double *ovh = bench_alloc(sizeof(double) * samples);
    for (int s = 0; s < samples; s++) {
        /* Each sample is paired with its own reference, taken right before or after it (in
         * turn), so a drift of the host's speed moves both alike. */
        double r, x;
        if (s % 2) {
            x = time_once(t->run, inner);
            r = time_once(t->ref, inner);
        } else {
            r = time_once(t->ref, inner);
            x = time_once(t->run, inner);
        }
        ref[s] = r;
        ovh[s] = (x - r) / (double)inner * 1e6;
    }
    qsort(ref, samples, sizeof *ref, bench_cmp_double);
    double ref_med = samples % 2 ? ref[samples / 2] : (ref[samples / 2 - 1] + ref[samples / 2]) / 2;
    printf("# %s: inner=%ld reference=%.3f us/rep\n", t->name, inner, ref_med / inner * 1e6);
    double xfer_after = team_round_trip();
    char extra[64];
    if (par.nthreads > 1)
        snprintf(extra, sizeof extra, "threads=%d xfer=%.0f-%.0f", par.nthreads, xfer_before, xfer_after);
    else
        snprintf(extra, sizeof extra, "threads=%d", par.nthreads);
    bench_result("omp", t->name, "us", ovh, samples, extra);
    free(ref);
    free(ovh);
}

/* Whether `name` starts with one of the comma-separated prefixes in `only` (all when NULL). */
static int selected(const char *name, const char *only) {
    if (!only)
        return 1;
    for (const char *p = only; *p;) {
        size_t len = strcspn(p, ",");
        if (len && !strncmp(name, p, len))
            return 1;
        p += len + (p[len] == ',');
    }
    return 0;
}

int main(int argc, char **argv) {
    int quick = 0, samples = 0;
    const char *only = NULL;
    double sched_delay_us = DELAY_US;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            only = argv[++i];
        } else if (!strcmp(argv[i], "--sched-delay") && i + 1 < argc && atof(argv[i + 1]) > 0) {
            sched_delay_us = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--sched-iters") && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            par.sched_iters = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--samples") && i + 1 < argc && atoi(argv[i + 1]) > 0) {
            samples = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: epcc [--quick] [--samples N] [--only PREFIX[,PREFIX...]] [--sched-delay US] [--sched-iters N]\n");
            return 2;
        }
    }
    if (!samples)
        samples = quick ? 20 : 50;
    double target_s = quick ? 0.25e-3 : 0.5e-3;

    par.nthreads = omp_get_max_threads();
    sched_share = aligned_alloc(sizeof(line_long), sizeof(line_long) * par.nthreads);
    if (!sched_share)
        return fprintf(stderr, "out of memory\n"), 1;
    omp_init_lock(&lock.v);
#pragma omp parallel
    delay(1000); /* start the thread team before calibrating */
    par.delay_sync = calibrate_delay(DELAY_US);
    par.delay_sched = calibrate_delay(sched_delay_us);
    printf("# epcc: threads=%d samples=%d target_sample=%.1f us delay=%ld iters (%.2f us), "
           "sched delay=%ld iters (%.2f us), iters/thread=%ld%s\n",
           par.nthreads, samples, target_s * 1e6, par.delay_sync, DELAY_US, par.delay_sched,
           sched_delay_us, par.sched_iters, quick ? " (quick)" : "");
    fflush(stdout);

    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++)
        if (selected(tests[i].name, only))
            measure(&tests[i], samples * tests[i].more, target_s);
    omp_destroy_lock(&lock.v);
    printf("# epcc: done (atomic/reduction check %ld)\n", atomic_counter.v);
    return 0;
}
