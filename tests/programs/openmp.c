/* OpenMP with the compiler's own libgomp: parallel; for with schedule(static), (static,7),
 * (dynamic,3), (guided,5) and (runtime); reductions + * max min; critical; atomic; locks; single;
 * master; barrier; sections; ordered; tasks with taskwait; taskloop; threadprivate with copyin;
 * omp_get_wtime. Every printed result is independent of the number of threads, except the line
 * "omp_get_num_procs: N" (the CPUs the program may run on) that a test compares with the vCPUs.
 * Exit status 0 when every check passed. */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void check(const char *what, int ok) {
    printf("%-60s %s\n", what, ok ? "ok" : "FAILED");
    failures += !ok;
}

static void result(const char *what, long long got, long long want) {
    printf("%-46s %lld (expected %lld) %s\n", what, got, want, got == want ? "ok" : "FAILED");
    failures += got != want;
}

enum { N = 100000, MAX_THREADS = 256 };

static int owner[N];
static int hits[N];

/* Each iteration of a worksharing loop runs exactly once; returns a checksum of f(i). */
static long long checksum_and_reset(int *ok) {
    long long sum = 0;
    *ok = 1;
    for (int i = 0; i < N; i++) {
        if (hits[i] != 1)
            *ok = 0;
        hits[i] = 0;
        sum += (long long)i * (i % 7);
    }
    return sum;
}

static long long fib(int n) {
    if (n < 2)
        return n;
    if (n < 14)
        return fib(n - 1) + fib(n - 2);
    long long a, b;
#pragma omp task shared(a) firstprivate(n)
    a = fib(n - 1);
#pragma omp task shared(b) firstprivate(n)
    b = fib(n - 2);
#pragma omp taskwait
    return a + b;
}

static int tp_value;
#pragma omp threadprivate(tp_value)

int main(void) {
    /* The one line that depends on the machine: the harness checks it against the vCPUs. */
    printf("omp_get_num_procs: %d\n", omp_get_num_procs());
    int max_threads = omp_get_max_threads();
    printf("omp_get_max_threads: %d\n", max_threads);
    if (max_threads > MAX_THREADS) {
        printf("more than %d threads are not supported by this test\n", MAX_THREADS);
        return 1;
    }
    check("omp_in_parallel is 0 outside parallel", !omp_in_parallel());

    /* parallel: the team has max_threads members, each thread number once. */
    int team_size = 0, seen[MAX_THREADS] = {0}, in_parallel = 1;
#pragma omp parallel
    {
#pragma omp atomic
        team_size++;
        int t = omp_get_thread_num();
        if (t >= 0 && t < MAX_THREADS) {
#pragma omp atomic
            seen[t]++;
        }
        if (omp_in_parallel() != (max_threads > 1) || omp_get_num_threads() != max_threads) {
#pragma omp atomic write
            in_parallel = 0;
        }
    }
    int each_once = 1;
    for (int t = 0; t < MAX_THREADS; t++)
        each_once &= seen[t] == (t < max_threads);
    check("parallel: team size is omp_get_max_threads", team_size == max_threads);
    check("parallel: thread numbers 0..n-1 once each", each_once);
    check("parallel: omp_in_parallel and omp_get_num_threads", in_parallel);
    int nt3 = 0;
#pragma omp parallel num_threads(3)
    {
#pragma omp single
        nt3 = omp_get_num_threads();
    }
    check("parallel num_threads(3) gives 3 threads", nt3 == 3);

    /* Worksharing loops with every schedule: each iteration once, and the static schedules
     * assign iterations to threads by their rule. */
    const long long want = ({
        long long s = 0;
        for (int i = 0; i < N; i++)
            s += (long long)i * (i % 7);
        s;
    });
    int ok, nthreads = 1;
    long long sum;
#pragma omp parallel
    {
#pragma omp single
        nthreads = omp_get_num_threads();
#pragma omp for schedule(static)
        for (int i = 0; i < N; i++) {
            hits[i]++;
            owner[i] = omp_get_thread_num();
        }
    }
    int rule = 1;
    for (int i = 1; i < N; i++)
        rule &= owner[i] >= owner[i - 1]; /* contiguous blocks in thread order */
    {
        /* Blocks differ in size by at most one iteration. */
        int count[MAX_THREADS] = {0}, lo = N, hi = 0;
        for (int i = 0; i < N; i++)
            count[owner[i]]++;
        for (int t = 0; t < nthreads; t++) {
            lo = count[t] < lo ? count[t] : lo;
            hi = count[t] > hi ? count[t] : hi;
        }
        rule &= hi - lo <= 1;
    }
    sum = checksum_and_reset(&ok);
    check("for schedule(static): every iteration once", ok && sum == want);
    check("for schedule(static): contiguous balanced blocks", rule);

#pragma omp parallel for schedule(static, 7)
    for (int i = 0; i < N; i++) {
        hits[i]++;
        owner[i] = omp_get_thread_num();
    }
    rule = 1;
    for (int i = 0; i < N; i++)
        rule &= owner[i] == (i / 7) % nthreads;
    sum = checksum_and_reset(&ok);
    check("for schedule(static,7): every iteration once", ok && sum == want);
    check("for schedule(static,7): round-robin chunks of 7", rule);

    long long dyn_sum = 0;
#pragma omp parallel for schedule(dynamic, 3) reduction(+ : dyn_sum)
    for (int i = 0; i < N; i++) {
        hits[i]++;
        dyn_sum += (long long)i * (i % 7);
    }
    sum = checksum_and_reset(&ok);
    check("for schedule(dynamic,3): every iteration once", ok && sum == want && dyn_sum == want);

    long long guided_sum = 0;
#pragma omp parallel for schedule(guided, 5) reduction(+ : guided_sum)
    for (int i = 0; i < N; i++) {
        hits[i]++;
        guided_sum += (long long)i * (i % 7);
    }
    sum = checksum_and_reset(&ok);
    check("for schedule(guided,5): every iteration once", ok && sum == want && guided_sum == want);

    omp_set_schedule(omp_sched_dynamic, 11);
#pragma omp parallel for schedule(runtime)
    for (int i = 0; i < N; i++)
        hits[i]++;
    sum = checksum_and_reset(&ok);
    check("for schedule(runtime) dynamic,11: every iteration once", ok && sum == want);

    /* Triangular loop with collapse and a nowait loop followed by a barrier. */
    long long tri = 0;
#pragma omp parallel for collapse(2) reduction(+ : tri) schedule(dynamic, 16)
    for (int i = 0; i < 300; i++)
        for (int j = 0; j < 300; j++)
            tri += (j <= i) ? (long long)(i + 1) * (j + 1) : 0;
    long long tri_want = 0;
    for (int i = 0; i < 300; i++)
        for (int j = 0; j <= i; j++)
            tri_want += (long long)(i + 1) * (j + 1);
    result("collapse(2) reduction", tri, tri_want);

    /* Reductions: + * max min & | ^ over integers (exact in any order), + over doubles that are
     * exact (small integers). */
    long long rsum = 0, rmax = -1, rmin = 1LL << 62;
    unsigned long long rprod = 1, rand_ = ~0ull, ror = 0, rxor = 0;
    double dsum = 0;
#pragma omp parallel for reduction(+ : rsum, dsum) reduction(* : rprod) reduction(max : rmax) \
    reduction(min : rmin) reduction(& : rand_) reduction(| : ror) reduction(^ : rxor)
    for (int i = 1; i <= N; i++) {
        rsum += i;
        dsum += (double)(i % 100);
        rprod *= (i % 1000 == 0) ? 3u : 1u;
        long long v = ((long long)i * 7919) % 100003;
        rmax = v > rmax ? v : rmax;
        rmin = v < rmin ? v : rmin;
        rand_ &= ~(1ull << (i % 64)) | (i % 3 ? 1ull << (i % 64) : 0);
        ror |= 1ull << (i % 61);
        rxor ^= (unsigned long long)i * 0x9e3779b97f4a7c15ull;
    }
    unsigned long long xor_want = 0;
    for (int i = 1; i <= N; i++)
        xor_want ^= (unsigned long long)i * 0x9e3779b97f4a7c15ull;
    unsigned long long prod_want = 1;
    for (int k = 0; k < N / 1000; k++)
        prod_want *= 3u;
    long long max_want = -1, min_want = 1LL << 62;
    for (int i = 1; i <= N; i++) {
        long long v = ((long long)i * 7919) % 100003;
        max_want = v > max_want ? v : max_want;
        min_want = v < min_want ? v : min_want;
    }
    result("reduction(+) sum 1..100000", rsum, (long long)N * (N + 1) / 2);
    result("reduction(+) double sum", (long long)dsum, 4950LL * (N / 100));
    result("reduction(*) product of 3s (mod 2^64)", (long long)rprod, (long long)prod_want);
    result("reduction(max)", rmax, max_want);
    result("reduction(min)", rmin, min_want);
    result("reduction(&)", (long long)rand_, 0);
    result("reduction(|)", (long long)ror, (long long)((1ull << 61) - 1));
    result("reduction(^)", (long long)rxor, (long long)xor_want);

    /* critical (named and unnamed), atomic update/capture/read/write, locks. */
    long long crit = 0, crit2 = 0, at = 0, cap = 0, captured_sum = 0;
    omp_lock_t lock;
    omp_init_lock(&lock);
    long long locked = 0;
    omp_nest_lock_t nest;
    omp_init_nest_lock(&nest);
    long long nested = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : captured_sum)
    for (int i = 0; i < 20000; i++) {
#pragma omp critical
        crit += i;
#pragma omp critical(other)
        crit2 += 2;
#pragma omp atomic
        at += 3;
        long long mine;
#pragma omp atomic capture
        mine = ++cap;
        captured_sum += mine; /* each value 1..20000 captured exactly once */
        if (i % 1000 == 0) {
            omp_set_lock(&lock);
            locked++;
            omp_unset_lock(&lock);
            omp_set_nest_lock(&nest);
            omp_set_nest_lock(&nest);
            nested++;
            omp_unset_nest_lock(&nest);
            omp_unset_nest_lock(&nest);
        }
    }
    omp_destroy_lock(&lock);
    omp_destroy_nest_lock(&nest);
    long long at_read;
#pragma omp atomic read
    at_read = at;
    result("critical sum", crit, 20000LL * 19999 / 2);
    result("named critical", crit2, 40000);
    result("atomic update", at_read, 60000);
    result("atomic capture: sum of captured values", captured_sum, 20000LL * 20001 / 2);
    result("omp_set_lock counter", locked, 20);
    result("nested lock counter", nested, 20);

    /* single, master, barrier, phases. */
    int singles = 0, masters = 0, master_tid_ok = 1, barrier_errors = 0;
    int phase[MAX_THREADS];
#pragma omp parallel
    {
        int t = omp_get_thread_num(), n = omp_get_num_threads();
        for (int round = 1; round <= 10; round++) {
#pragma omp single
            singles++;
#pragma omp master
            {
                masters++;
                master_tid_ok &= omp_get_thread_num() == 0;
            }
            phase[t] = round;
#pragma omp barrier
            for (int k = 0; k < n; k++)
                if (phase[k] != round) {
#pragma omp atomic
                    barrier_errors++;
                }
#pragma omp barrier
        }
    }
    result("single executions (10 rounds)", singles, 10);
    result("master executions (10 rounds)", masters, 10);
    check("master runs on thread 0", master_tid_ok);
    result("barrier: stale phases seen", barrier_errors, 0);

    /* sections: each runs exactly once. */
    int sec[5] = {0};
#pragma omp parallel sections
    {
#pragma omp section
        sec[0]++;
#pragma omp section
        sec[1]++;
#pragma omp section
        sec[2]++;
#pragma omp section
        sec[3]++;
#pragma omp section
        sec[4]++;
    }
    check("sections: 5 sections, each once", sec[0] == 1 && sec[1] == 1 && sec[2] == 1 && sec[3] == 1 && sec[4] == 1);

    /* ordered: iterations print in order through a buffer. */
    char ordered_buf[4096];
    size_t ordered_len = 0;
#pragma omp parallel for ordered schedule(dynamic, 1)
    for (int i = 0; i < 40; i++) {
        int v = i * i;
#pragma omp ordered
        ordered_len += (size_t)snprintf(ordered_buf + ordered_len, sizeof ordered_buf - ordered_len, "%d ", v);
    }
    char ordered_want[4096];
    size_t want_len = 0;
    for (int i = 0; i < 40; i++)
        want_len += (size_t)snprintf(ordered_want + want_len, sizeof ordered_want - want_len, "%d ", i * i);
    check("ordered: iterations in sequence", ordered_len == want_len && strcmp(ordered_buf, ordered_want) == 0);

    /* tasks with taskwait, and taskloop. */
    long long f = 0;
#pragma omp parallel
#pragma omp single
    f = fib(27);
    result("tasks: fib(27)", f, 196418);
    long long tl = 0;
#pragma omp parallel
#pragma omp single
    {
#pragma omp taskloop grainsize(500) reduction(+ : tl)
        for (int i = 0; i < N; i++)
            tl += i % 13;
    }
    long long tl_want = 0;
    for (int i = 0; i < N; i++)
        tl_want += i % 13;
    result("taskloop reduction", tl, tl_want);
    int task_count = 0;
#pragma omp parallel
    {
#pragma omp single
        for (int i = 0; i < 500; i++) {
#pragma omp task
            {
#pragma omp atomic
                task_count++;
            }
        }
        /* The implicit barrier at the end of single completes the tasks. */
    }
    result("500 tasks from single, completed at the barrier", task_count, 500);

    /* threadprivate persists across regions; copyin broadcasts the master's value. */
    int tp_ok = 1;
#pragma omp parallel
    tp_value = 1000 + omp_get_thread_num();
#pragma omp parallel reduction(& : tp_ok)
    tp_ok = tp_value == 1000 + omp_get_thread_num();
    check("threadprivate values persist between regions", tp_ok);
    tp_value = 4242;
    int copyin_ok = 1;
#pragma omp parallel copyin(tp_value) reduction(& : copyin_ok)
    copyin_ok = tp_value == 4242;
    check("threadprivate copyin", copyin_ok);

    /* omp_get_wtime never goes backwards, in any thread. */
    int monotonic = 1;
    double tick = omp_get_wtick();
#pragma omp parallel reduction(& : monotonic)
    {
        double last = omp_get_wtime();
        for (int i = 0; i < 500; i++) {
            double now = omp_get_wtime();
            monotonic &= now >= last;
            last = now;
        }
    }
    double t0 = omp_get_wtime();
    volatile double spin = 0;
    for (int i = 0; i < 1000000; i++)
        spin = spin + 1;
    double t1 = omp_get_wtime();
    check("omp_get_wtime monotonic in every thread", monotonic);
    check("omp_get_wtime advances over a busy loop", t1 > t0);
    check("omp_get_wtick positive and below 1 ms", tick > 0 && tick < 1e-3);

    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
