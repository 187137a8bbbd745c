/* OpenMP constructs as the kernel's own runtime (hrt run --omp kernel) must run them, written
 * from the OpenMP specification and compared with the same program on libgomp natively: every
 * printed line is independent of timing and of how many CPUs there are (thread counts are set
 * by num_threads clauses and OMP_NUM_THREADS where printed). Exit status 0 when all checks pass.
 * Tasks in depth, and task reductions, are in omp_tasks.c. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void check(const char *what, int ok) {
    printf("%-58s %s\n", what, ok ? "ok" : "FAILED");
    failures += !ok;
}

enum { N = 10007 };
static int hits[N];

static int all_once(void) {
    int ok = 1;
    for (int i = 0; i < N; i++) {
        ok &= hits[i] == 1;
        hits[i] = 0;
    }
    return ok;
}

/* Checks that the loop just run (labelled `what`, on `nth` threads) ran every iteration once. */
static void once_each(const char *what, int nth) {
    char line[96];
    snprintf(line, sizeof line, "%s, %d threads: every iteration once", what, nth);
    check(line, all_once());
}

/* A parallel loop over hits[] with schedule(...), then the check that it ran every iteration
 * once (the pragma is built from the macro's arguments). */
#define DO_PRAGMA(x) _Pragma(#x)
#define FOR_EACH_ONCE(label, ...)                                                                \
    do {                                                                                         \
        DO_PRAGMA(omp parallel for num_threads(nth) schedule(__VA_ARGS__))                       \
        for (int i = 0; i < N; i++)                                                              \
            __atomic_fetch_add(&hits[i], 1, __ATOMIC_RELAXED);                                   \
        once_each(label, nth);                                                                   \
    } while (0)

static void loops(int nth) {
    char what[96];
    FOR_EACH_ONCE("for static", static);
    FOR_EACH_ONCE("for static,3", static, 3);
    FOR_EACH_ONCE("for dynamic,17", dynamic, 17);
    FOR_EACH_ONCE("for guided,7", guided, 7);
    FOR_EACH_ONCE("for nonmonotonic:dynamic,5", nonmonotonic : dynamic, 5);
    /* schedule(runtime) under every kind omp_set_schedule can name. */
    static const omp_sched_t kinds[] = {omp_sched_static, omp_sched_dynamic, omp_sched_guided, omp_sched_auto,
                                        omp_sched_monotonic | omp_sched_dynamic};
    for (unsigned k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        omp_set_schedule(kinds[k], k == 3 ? 0 : (int)k * 4);
#pragma omp parallel num_threads(nth)
        {
#pragma omp for schedule(runtime)
            for (int i = 0; i < N; i++)
                __atomic_fetch_add(&hits[i], 1, __ATOMIC_RELAXED);
        }
        snprintf(what, sizeof what, "for runtime kind %#x, %d threads: every iteration once", (unsigned)kinds[k], nth);
        check(what, all_once());
    }
    omp_set_schedule(omp_sched_dynamic, 1);
    /* Downward loops, strides, and unsigned long long bounds near the top of the range. */
    long down = 0;
#pragma omp parallel for num_threads(nth) schedule(dynamic, 4) reduction(+ : down)
    for (long i = 1000; i > -1000; i -= 3)
        down += i;
    long want = 0;
    for (long i = 1000; i > -1000; i -= 3)
        want += i;
    snprintf(what, sizeof what, "downward loop, stride 3, %d threads", nth);
    check(what, down == want);
    unsigned long long usum = 0, uwant = 0;
    unsigned long long top = ~0ULL - 10;
#pragma omp parallel for num_threads(nth) schedule(guided, 2) reduction(+ : usum)
    for (unsigned long long u = top - 5000; u < top; u += 7)
        usum += u & 0xffff;
    for (unsigned long long u = top - 5000; u < top; u += 7)
        uwant += u & 0xffff;
    snprintf(what, sizeof what, "unsigned long long loop near 2^64, %d threads", nth);
    check(what, usum == uwant);
    /* Ordered: the ordered parts run in iteration order. */
    int seq[200], pos = 0;
#pragma omp parallel for num_threads(nth) ordered schedule(dynamic, 3)
    for (int i = 0; i < 200; i++) {
#pragma omp ordered
        seq[pos++] = i;
    }
    int inorder = pos == 200;
    for (int i = 0; i < pos; i++)
        inorder &= seq[i] == i;
    snprintf(what, sizeof what, "ordered dynamic, %d threads: in sequence", nth);
    check(what, inorder);
    pos = 0;
#pragma omp parallel for num_threads(nth) ordered schedule(static)
    for (int i = 0; i < 200; i++) {
        if (i % 3 == 0) {
#pragma omp ordered
            seq[pos++] = i;
        }
    }
    inorder = pos == 67;
    for (int i = 0; i < pos; i++)
        inorder &= seq[i] == i * 3;
    snprintf(what, sizeof what, "ordered static, some iterations, %d threads", nth);
    check(what, inorder);
    /* Empty loops. */
    int ran = 0;
#pragma omp parallel for num_threads(nth) schedule(dynamic)
    for (int i = 5; i < 5; i++)
        ran = 1;
    check("empty loop runs nothing", !ran);
    /* nowait loops back to back, then a barrier. */
#pragma omp parallel num_threads(nth)
    {
        for (int r = 0; r < 20; r++) {
#pragma omp for schedule(dynamic, 13) nowait
            for (int i = 0; i < N; i++)
                __atomic_fetch_add(&hits[i], 1, __ATOMIC_RELAXED);
        }
    }
    int twenty = 1;
    for (int i = 0; i < N; i++) {
        twenty &= hits[i] == 20;
        hits[i] = 0;
    }
    snprintf(what, sizeof what, "20 nowait loops, %d threads: each iteration 20 times", nth);
    check(what, twenty);
}

static void constructs(int nth) {
    char what[96];
    int ids = 0, size = 0, singles = 0, masters = 0, crit = 0, secs[4] = {0};
    long named = 0;
    omp_lock_t lock;
    omp_nest_lock_t nest;
    omp_init_lock(&lock);
    omp_init_nest_lock(&nest);
    int locked = 0, nest_locked = 0;
#pragma omp parallel num_threads(nth)
    {
        __atomic_fetch_or(&ids, 1 << omp_get_thread_num(), __ATOMIC_RELAXED);
#pragma omp single
        size = omp_get_num_threads();
        for (int r = 0; r < 10; r++) {
#pragma omp single
            singles++;
#pragma omp master
            masters++;
#pragma omp barrier
        }
        for (int r = 0; r < 100; r++) {
#pragma omp critical
            crit++;
#pragma omp critical(other)
            named += 2;
            omp_set_lock(&lock);
            locked++;
            omp_unset_lock(&lock);
            omp_set_nest_lock(&nest);
            omp_set_nest_lock(&nest);
            nest_locked++;
            omp_unset_nest_lock(&nest);
            omp_unset_nest_lock(&nest);
        }
#pragma omp sections
        {
#pragma omp section
            secs[0]++;
#pragma omp section
            secs[1]++;
#pragma omp section
            secs[2]++;
#pragma omp section
            secs[3]++;
        }
        int value = omp_get_thread_num() == 0 ? 0 : -1;
#pragma omp single copyprivate(value)
        value = 4242;
        if (value != 4242)
            __atomic_fetch_add(&crit, 1000000, __ATOMIC_RELAXED);
    }
    omp_destroy_lock(&lock);
    omp_destroy_nest_lock(&nest);
    snprintf(what, sizeof what, "parallel num_threads(%d): team size and thread numbers", nth);
    check(what, size == nth && ids == (1 << nth) - 1);
    check("single once per round, master on thread 0", singles == 10 && masters == 10);
    check("critical, named critical, locks, nest locks", crit == 100 * nth && named == 200 * nth && locked == 100 * nth &&
                                                        nest_locked == 100 * nth);
    check("sections: each section once", secs[0] == 1 && secs[1] == 1 && secs[2] == 1 && secs[3] == 1);
    check("single copyprivate broadcasts the value", 1);
    long sum = 0;
#pragma omp parallel sections num_threads(nth) reduction(+ : sum)
    {
#pragma omp section
        sum += 1;
#pragma omp section
        sum += 10;
#pragma omp section
        sum += 100;
    }
    check("parallel sections with a reduction", sum == 111);
}

static long fib(int n) {
    if (n < 2)
        return n;
    long a, b;
#pragma omp task shared(a) firstprivate(n) final(n < 10)
    a = fib(n - 1);
#pragma omp task shared(b) firstprivate(n) final(n < 10)
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}

static void tasks(int nth) {
    long f = 0;
    int order[64], pos = 0, total = 0;
#pragma omp parallel num_threads(nth)
#pragma omp single
    {
        f = fib(20);
        int x = 0;
        for (int i = 0; i < 64; i++) {
#pragma omp task depend(inout : x) shared(order, pos)
            order[pos++] = i;
        }
#pragma omp taskgroup
        {
            for (int i = 0; i < 50; i++) {
#pragma omp task shared(total)
                __atomic_fetch_add(&total, i, __ATOMIC_RELAXED);
            }
        }
    }
    check("tasks: fib(20) with taskwait and final", f == 6765);
    int inorder = pos == 64;
    for (int i = 0; i < pos; i++)
        inorder &= order[i] == i;
    check("tasks with depend(inout) run in creation order", inorder);
    check("taskgroup waits for its tasks", total == 49 * 50 / 2);
    int counts[3] = {0};
#pragma omp parallel num_threads(nth)
#pragma omp single
    {
#pragma omp taskloop grainsize(10)
        for (int i = 0; i < N; i++)
            __atomic_fetch_add(&hits[i], 1, __ATOMIC_RELAXED);
        counts[0] = all_once();
#pragma omp taskloop num_tasks(7)
        for (long i = 3; i < 3000; i += 2)
            __atomic_fetch_add(&hits[i], 1, __ATOMIC_RELAXED);
        int ok = 1;
        for (int i = 0; i < N; i++) {
            ok &= hits[i] == (i >= 3 && i < 3000 && i % 2 == 1);
            hits[i] = 0;
        }
        counts[1] = ok;
    }
    check("taskloop grainsize: every iteration once", counts[0]);
    check("taskloop num_tasks, stride 2: every iteration once", counts[1]);
}

static void icvs(void) {
    printf("outside: level %d active %d in_parallel %d num_threads %d thread %d\n", omp_get_level(),
           omp_get_active_level(), omp_in_parallel(), omp_get_num_threads(), omp_get_thread_num());
    printf("max_active_levels %d nested %d dynamic %d thread_limit %d cancellation %d\n",
           omp_get_max_active_levels(), omp_get_nested(), omp_get_dynamic(), omp_get_thread_limit(),
           omp_get_cancellation());
    omp_sched_t kind;
    int chunk;
    omp_get_schedule(&kind, &chunk);
    printf("schedule kind %d chunk %d\n", (int)kind, chunk);
    omp_set_schedule(omp_sched_guided, 9);
    omp_get_schedule(&kind, &chunk);
    printf("set schedule guided,9: kind %d chunk %d\n", (int)kind, chunk);
    omp_set_schedule(omp_sched_dynamic, 1);
    printf("in_final %d num_teams %d team_num %d devices %d initial %d\n", omp_in_final(), omp_get_num_teams(),
           omp_get_team_num(), omp_get_num_devices(), omp_is_initial_device());
    /* Nested regions: inactive by default, active after omp_set_max_active_levels(2). */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1)
            omp_set_max_active_levels(2);
        int inner_sizes = 0, levels_ok = 1;
#pragma omp parallel num_threads(2) reduction(+ : inner_sizes)
        {
            int outer_id = omp_get_thread_num();
#pragma omp parallel num_threads(3) reduction(+ : inner_sizes)
            {
                inner_sizes += omp_get_num_threads() == (pass ? 3 : 1);
                if (omp_get_level() != 2 || omp_get_ancestor_thread_num(1) != outer_id ||
                    omp_get_ancestor_thread_num(0) != 0 || omp_get_team_size(1) != 2 ||
                    omp_get_active_level() != (pass ? 2 : 1) || omp_get_ancestor_thread_num(3) != -1)
                    __atomic_store_n(&levels_ok, 0, __ATOMIC_RELAXED);
            }
        }
        printf("nested pass %d: inner teams sized right %d, levels and ancestors %s\n", pass, inner_sizes,
               levels_ok ? "ok" : "FAILED");
        failures += !levels_ok;
    }
    int seen = 0;
    omp_set_num_threads(3);
#pragma omp parallel
    {
#pragma omp single
        seen = omp_get_num_threads();
    }
    check("omp_set_num_threads(3) sizes the next team", seen == 3);
    double t0 = omp_get_wtime();
    volatile double x = 0;
    for (int i = 0; i < 2000000; i++)
        x += i;
    check("omp_get_wtime advances, omp_get_wtick is small", omp_get_wtime() > t0 && omp_get_wtick() < 1e-3);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    icvs();
    for (int nth = 1; nth <= 5; nth += 2) {
        loops(nth);
        constructs(nth);
        tasks(nth);
    }
    /* Many short regions: the team is reused. */
    long total = 0;
    for (int r = 0; r < 2000; r++) {
#pragma omp parallel num_threads(3) reduction(+ : total)
        total += omp_get_thread_num();
    }
    check("2000 short regions of 3 threads", total == 2000 * 3);
    printf(failures ? "%d FAILED\n" : "all checks passed\n", failures);
    return failures != 0;
}
