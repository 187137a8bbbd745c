/* Behaviours GCC's libgomp testsuite checks that the kernel's OpenMP runtime once got wrong,
 * each written here from the OpenMP specification (5.1) and compared with libgomp's output:
 *  - nestable locks are owned by tasks: a `parallel if(0)` region or an included task does
 *    not own its encountering task's lock;
 *  - doacross loop nests deeper than 16 loops (the `sink` vector comes as variadic arguments),
 *    and an empty one (whose counts gcc leaves partly unset);
 *  - a task that names one address twice in its depend clauses does not wait for itself;
 *  - omp_realloc within one pool-limited allocator counts the old block as given back;
 *  - `cancel taskgroup` in a task of a work-sharing loop with task reductions cancels the
 *    program's taskgroup (a later task in it is discarded), when OMP_CANCELLATION is true;
 *  - omp_pause_resource_all ends the idle worker threads (libgomp: threadprivate data of
 *    threads other than the initial one starts anew);
 *  - thread-limit-var bounds the threads of the whole contention group (nested teams), when
 *    OMP_THREAD_LIMIT is set;
 *  - the combined-construct entry points of the old ABI (gcc before 4.9), called as such
 *    programs call them;
 *  - a team of one gets a static loop's whole range as one chunk, whatever the chunk size
 *    (gcc sets a `linear` variable of an `ordered` loop at each chunk's start and does not step
 *    it inside the chunk, so the chunks show: the values printed are libgomp's, not the
 *    specification's).
 * Prints one line per check and "all checks passed"; the output does not depend on the
 * number of CPUs. With the argument `target` it runs `target` regions instead: on the host
 * when asked for (if(0), the initial device), then on device 1, which does not exist: an error
 * that ends the program with OMP_TARGET_OFFLOAD=mandatory, the host otherwise. With `error`,
 * `error` directives at run time: a warning, then a fatal one (stdout still buffered). */
#include <omp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void check(const char *what, bool ok) {
    if (!ok) {
        printf("FAILED: %s\n", what);
        failures++;
    }
}

static void nest_locks(void) {
    omp_nest_lock_t l;
    omp_init_nest_lock(&l);
    int a = omp_test_nest_lock(&l);
    int b = omp_test_nest_lock(&l);
    int in_region = -1, in_task = -1;
#pragma omp parallel if (0)
    in_region = omp_test_nest_lock(&l);
#pragma omp task if (0) shared(in_task)
    in_task = omp_test_nest_lock(&l);
    int c = omp_test_nest_lock(&l);
    omp_unset_nest_lock(&l);
    omp_unset_nest_lock(&l);
    omp_unset_nest_lock(&l);
    omp_destroy_nest_lock(&l);
    printf("nest lock: %d %d, from parallel if(0) %d, from an included task %d, again %d\n", a, b, in_region,
           in_task, c);
    check("nest lock counts", a == 1 && b == 2 && c == 3 && in_region == 0 && in_task == 0);
}

/* A doacross nest of 18 loops: i, then j (2 iterations), then 16 loops of one iteration. */
#define N 48
int doacross_posted[N][2];
#define ONE(v) for (v = 0; v < 1; v++)
static void deep_doacross(void) {

    int bad = 0, i, j, k0, k1, k2, k3, k4, k5, k6, k7, k8, k9, k10, k11, k12, k13, k14, k15;
#pragma omp parallel for ordered(18) schedule(dynamic, 1) reduction(+ : bad)
    for (i = 0; i < N; i++)
        for (j = 0; j < 2; j++)
            ONE(k0) ONE(k1) ONE(k2) ONE(k3) ONE(k4) ONE(k5) ONE(k6) ONE(k7) ONE(k8) ONE(k9) ONE(k10) ONE(k11)
                ONE(k12) ONE(k13) ONE(k14) ONE(k15) {
#pragma omp ordered depend(sink : i - 1, j, k0, k1, k2, k3, k4, k5, k6, k7, k8, k9, k10, k11, k12, k13, k14, k15)
                int prev = 1;
                if (i > 0) {
#pragma omp atomic read
                    prev = doacross_posted[i - 1][j];
                }
                bad += !prev;
#pragma omp atomic write
                doacross_posted[i][j] = 1;
#pragma omp ordered depend(source)
            }
    printf("doacross nest of 18 loops: %d iterations ran before their sink\n", bad);
    check("doacross order", bad == 0);
    /* An empty nest: gcc leaves the counts after the empty loop's unset. */
    volatile int none = 0;
    int ran = 0;
#pragma omp parallel for ordered(3) reduction(+ : ran)
    for (i = 0; i < none; i++)
        for (j = 0; j < 1000; j++)
            for (k0 = 0; k0 < 1000; k0++) {
#pragma omp ordered depend(sink : i - 1, j, k0)
                ran++;
#pragma omp ordered depend(source)
            }
    printf("empty doacross nest: %d iterations\n", ran);
    check("empty doacross nest", ran == 0);
}

static void duplicate_dependences(void) {
    int x = 0, seen1 = -1, seen2 = -1;
#pragma omp parallel
#pragma omp single
    {
#pragma omp task depend(out : x) depend(inout : x) shared(x)
        x = 1;
#pragma omp task depend(in : x) depend(inout : x) depend(in : x) shared(x, seen1)
        {
            seen1 = x;
            x = 2;
        }
#pragma omp task depend(in : x) depend(in : x) shared(x, seen2)
        seen2 = x;
    }
    printf("tasks naming an address twice: saw %d then %d\n", seen1, seen2);
    check("duplicate dependences", seen1 == 1 && seen2 == 2);
}

static void realloc_in_pool(void) {
    omp_alloctrait_t traits[2] = {{omp_atk_pool_size, 4096}, {omp_atk_fallback, omp_atv_null_fb}};
    omp_allocator_handle_t a = omp_init_allocator(omp_default_mem_space, 2, traits);
    char *p = omp_alloc(3000, a);
    if (p)
        p[0] = 42;
    char *q = omp_realloc(p, 3500, a, a);
    char *r = omp_alloc(1000, a);
    printf("pool of 4096: 3000 bytes %s, grown to 3500 %s (kept %d), 1000 more %s\n", p ? "given" : "refused",
           q ? "given" : "refused", q ? q[0] : -1, r ? "given" : "refused");
    check("realloc in a pool", p && q && q[0] == 42 && !r);
    omp_free(q ? q : p, a);
    omp_destroy_allocator(a);
}

static void cancel_in_workshare_reduction(void) {
    int sum = 0, later_ran = 0, i;
#pragma omp parallel shared(later_ran)
#pragma omp taskgroup
    {
#pragma omp for reduction(task, + : sum)
        for (i = 0; i < 32; i++) {
            sum++;
#pragma omp task in_reduction(+ : sum)
            {
#pragma omp cancel taskgroup
            }
        }
#pragma omp task shared(later_ran)
        {
#pragma omp atomic
            later_ran++;
        }
    }
    printf("cancel taskgroup in a loop's task reduction (cancellation %s): sum %d, later tasks run %s\n",
           omp_get_cancellation() ? "on" : "off", sum, later_ran ? "some" : "none");
    check("cancel taskgroup", sum == 32 && (omp_get_cancellation() ? later_ran == 0 : later_ran > 0));
}

static int tp = 7;
#pragma omp threadprivate(tp)

static void pause_ends_workers(void) {
    int fresh = 0, others = 0;
#pragma omp parallel
    tp = 100 + omp_get_thread_num();
    int rc = omp_pause_resource_all(omp_pause_soft);
#pragma omp parallel reduction(+ : fresh, others)
    if (omp_get_thread_num() != 0) {
        others++;
        fresh += tp == 7;
    }
    printf("pause: %d, workers with fresh threadprivate data %s, initial thread's kept %s\n", rc,
           fresh == others ? "all" : "not all", tp == 100 ? "yes" : "no");
    check("pause", rc == 0 && fresh == others && tp == 100);
}

static void thread_limit(void) {
    int limit = omp_get_thread_limit();
    if (limit > 64) {
        printf("thread limit: none\n");
        return;
    }
    omp_set_dynamic(0);
    omp_set_max_active_levels(2);
    int top = 0, nested = 0;
#pragma omp parallel num_threads(8)
#pragma omp single
    top = omp_get_num_threads();
    /* Thread 1 of the outer team waits in its barrier (busy) while thread 0 makes a team. */
#pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 0) {
#pragma omp parallel num_threads(8)
#pragma omp single
            nested = omp_get_num_threads();
        }
#pragma omp barrier
    }
    printf("thread limit %d: a team of 8 gets %d, a nested team of 8 beside a busy thread %d\n", limit, top,
           nested);
    check("thread limit", top <= limit && nested <= limit - 1);
}

/* The old ABI: `parallel for schedule(dynamic, 3)` and `parallel sections` as gcc 4.x lowered
 * them. */
extern void GOMP_parallel_loop_dynamic_start(void (*)(void *), void *, unsigned, long, long, long, long);
extern void GOMP_parallel_sections_start(void (*)(void *), void *, unsigned, unsigned);
extern bool GOMP_loop_dynamic_next(long *, long *);
extern void GOMP_loop_end(void);
extern unsigned GOMP_sections_next(void);
extern void GOMP_sections_end(void);
extern void GOMP_parallel_end(void);

static void old_loop_body(void *arg) {
    long *sum = arg, lo, hi, mine = 0;
    while (GOMP_loop_dynamic_next(&lo, &hi))
        for (long i = lo; i < hi; i += 2)
            mine += i;
#pragma omp atomic
    *sum += mine;
    GOMP_loop_end();
}

static void old_sections_body(void *arg) {
    int *hits = arg;
    for (unsigned s = GOMP_sections_next(); s != 0; s = GOMP_sections_next()) {
#pragma omp atomic
        hits[s - 1]++;
    }
    GOMP_sections_end();
}

static void old_abi(void) {
    long sum = 0;
    GOMP_parallel_loop_dynamic_start(old_loop_body, &sum, 0, 1, 1001, 2, 3);
    old_loop_body(&sum);
    GOMP_parallel_end();
    int hits[5] = {0};
    GOMP_parallel_sections_start(old_sections_body, hits, 0, 5);
    old_sections_body(hits);
    GOMP_parallel_end();
    printf("old ABI: loop sum %ld, sections run %d %d %d %d %d\n", sum, hits[0], hits[1], hits[2], hits[3],
           hits[4]);
    check("old ABI", sum == 250000 && hits[0] == 1 && hits[4] == 1);
}

static long linear_value;

static void team_of_one_chunks(void) {
    long sum = 0;
    linear_value = 9;
#pragma omp for schedule(static, 1) ordered linear(linear_value : -2)
    for (long i = -13; i <= -6; i += 3) {
#pragma omp atomic
        sum += linear_value;
#pragma omp ordered
        {
        }
    }
    long orphaned = linear_value, sum_orphaned = sum;
    sum = 0;
    linear_value = 9;
#pragma omp parallel num_threads(1)
#pragma omp for schedule(static, 2) ordered linear(linear_value : 3)
    for (int i = 0; i < 7; i++) {
        sum += linear_value;
#pragma omp ordered
        {
        }
    }
    printf("team of one, static chunks: orphaned sum %ld final %ld, one thread sum %ld final %ld\n",
           sum_orphaned, orphaned, sum, linear_value);
}

static int target_regions(void) {
    int ran = 0;
#pragma omp target if (0) map(tofrom : ran)
    ran++;
#pragma omp target device(omp_get_initial_device()) map(tofrom : ran)
    ran++;
    omp_set_default_device(omp_get_initial_device());
#pragma omp target map(tofrom : ran)
    ran++;
    printf("target regions on the host: %d\n", ran);
    fflush(stdout);
#pragma omp target device(1) map(tofrom : ran)
    ran++;
    printf("target region on device 1 ran on the host: %d\n", ran);
    return 0;
}

static int error_directives(void) {
    setvbuf(stdout, NULL, _IOFBF, 4096);
    printf("before the warning\n");
#pragma omp error at(execution) severity(warning) message("a warning")
    printf("before the fatal error\n");
#pragma omp parallel num_threads(2)
    if (omp_get_thread_num() == 1) {
#pragma omp error at(execution) severity(fatal) message("stop here")
    }
    printf("after the fatal error\n");
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1)
        return strcmp(argv[1], "error") == 0 ? error_directives() : target_regions();
    nest_locks();
    deep_doacross();
    duplicate_dependences();
    realloc_in_pool();
    cancel_in_workshare_reduction();
    pause_ends_workers();
    thread_limit();
    old_abi();
    team_of_one_chunks();
    if (failures == 0)
        printf("all checks passed\n");
    return failures != 0;
}
