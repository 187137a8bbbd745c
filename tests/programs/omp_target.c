/* `target`, `teams` and the device API on a build without an offload device (gcc 12 here):
 * every target region runs on the host (the initial device). Written from the OpenMP 5.1
 * specification; prints only what does not depend on the CPU count or OMP_NUM_THREADS, and
 * ends with "all checks passed" when every check holds.
 *
 * - target with map clauses (to, from, tofrom, alloc), firstprivate scalars, arrays and an
 *   over-aligned struct (the region's copy, not the variable), is_device_ptr;
 * - target data with use_device_ptr, target enter/exit data, target update;
 * - nowait targets with depend clauses, ordered against tasks and each other;
 * - teams (host and in target) with distribute, distribute parallel for and reductions,
 *   num_teams, thread_limit, team numbers seen by the threads of a parallel region inside;
 * - inside a target region: a new initial thread (level 0, thread 0, not in parallel, the
 *   initial ICVs), nested parallel regions, and the encountering task's state back after;
 * - the device API's answers and the device memory routines on the initial device, and their
 *   errors for other device numbers. */
#include <errno.h>
#include <limits.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        failures++;
        printf("FAILED: %s\n", what);
    }
}

enum { N = 1000 };

static void device_api(void) {
    printf("num_devices %d initial_device %d is_initial %d device_num %d default %d\n", omp_get_num_devices(),
           omp_get_initial_device(), omp_is_initial_device(), omp_get_device_num(), omp_get_default_device());
    omp_set_default_device(7);
    int seven = omp_get_default_device();
    omp_set_default_device(-3);
    printf("default after set(7) %d, after set(-3) %d\n", seven, omp_get_default_device());
    omp_set_default_device(omp_get_initial_device());
    int in_target[3] = {-1, -1, -1};
#pragma omp target map(from : in_target)
    {
        in_target[0] = omp_is_initial_device();
        in_target[1] = omp_get_device_num();
        in_target[2] = omp_get_num_devices();
    }
    printf("in target: is_initial %d device_num %d num_devices %d\n", in_target[0], in_target[1], in_target[2]);
}

struct wide {
    _Alignas(64) double v[3];
    int tag;
};

static void maps_and_firstprivate(void) {
    static double a[N], b[N];
    for (int i = 0; i < N; i++)
        a[i] = i * 0.5;
    double sum = 0;
    int scalar = 5;
    int arr[4] = {1, 2, 3, 4};
    struct wide w = {{1.5, 2.5, 3.5}, 9};
    int seen_scalar = 0, seen_arr = 0, seen_w = 0, aligned = 0;
#pragma omp target map(to : a) map(from : b) map(tofrom : sum) firstprivate(scalar, arr, w) \
    map(from : seen_scalar, seen_arr, seen_w, aligned)
    {
        for (int i = 0; i < N; i++) {
            b[i] = a[i] * 2;
            sum += b[i];
        }
        seen_scalar = scalar;
        seen_arr = arr[0] + arr[1] + arr[2] + arr[3];
        seen_w = (int)(w.v[0] + w.v[1] + w.v[2]) + w.tag;
        aligned = ((unsigned long)&w % 64) == 0;
        scalar = -1; /* the region's copies */
        arr[2] = -1;
        w.tag = -1;
    }
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= b[i] == i * 1.0;
    check(ok, "map(from:) array written in the region");
    printf("target sum %.1f firstprivate scalar %d array %d struct %d aligned %d\n", sum, seen_scalar, seen_arr,
           seen_w, aligned);
    printf("after target: scalar %d arr[2] %d tag %d\n", scalar, arr[2], w.tag);

    /* The implicit data-sharing of a scalar in a target region is firstprivate. */
    int implicit = 10;
#pragma omp target
    implicit += 1;
    printf("implicitly firstprivate scalar after target: %d\n", implicit);

    /* map(alloc:) and is_device_ptr on the host device: the same memory. */
    int *p = omp_target_alloc(N * sizeof *p, omp_get_default_device());
    check(p != NULL, "omp_target_alloc on the default device");
#pragma omp target is_device_ptr(p)
    for (int i = 0; i < N; i++)
        p[i] = i;
    long psum = 0;
    for (int i = 0; i < N; i++)
        psum += p[i];
    printf("is_device_ptr sum %ld\n", psum);
    omp_target_free(p, omp_get_default_device());
}

static void data_constructs(void) {
    static int v[N];
    for (int i = 0; i < N; i++)
        v[i] = i;
    int *host_v = v, *dev_v = NULL;
#pragma omp target data map(tofrom : v) use_device_ptr(host_v)
    {
        dev_v = host_v;
#pragma omp target
        for (int i = 0; i < N; i++)
            v[i] += 1;
        v[0] = 100; /* host memory is the device's: the update is a no-op either way */
#pragma omp target update to(v)
#pragma omp target
        v[1] += v[0];
#pragma omp target update from(v)
    }
    printf("target data: v[0] %d v[1] %d v[%d] %d use_device_ptr same %d\n", v[0], v[1], N - 1, v[N - 1],
           dev_v == v);

    static double x[N];
#pragma omp target enter data map(to : x)
#pragma omp target
    for (int i = 0; i < N; i++)
        x[i] = 2.0 * i;
#pragma omp target exit data map(from : x)
    double xs = 0;
    for (int i = 0; i < N; i++)
        xs += x[i];
    printf("enter/exit data sum %.1f present %d\n", xs, omp_target_is_present(x, omp_get_initial_device()));
}

static void nowait_and_depend(void) {
    int x = 0, y = 0, order[4] = {0}, step = 0;
#pragma omp parallel
#pragma omp single
    {
#pragma omp target nowait depend(out : x) map(tofrom : x, step, order)
        {
            x = 10;
            order[0] = ++step;
        }
#pragma omp task depend(inout : x) shared(x, step, order)
        {
            x *= 3;
            order[1] = ++step;
        }
#pragma omp target nowait depend(in : x) depend(out : y) map(to : x) map(tofrom : y, step, order)
        {
            y = x + 1;
            order[2] = ++step;
        }
#pragma omp target update from(y) depend(in : y) nowait
#pragma omp target depend(in : y) map(tofrom : step, order)
        order[3] = ++step;
#pragma omp taskwait
    }
    printf("nowait/depend: x %d y %d order %d %d %d %d\n", x, y, order[0], order[1], order[2], order[3]);

    /* Many independent nowait targets from several threads. */
    static int slots[64];
#pragma omp parallel
    {
#pragma omp for
        for (int i = 0; i < 64; i++) {
#pragma omp target nowait map(tofrom : slots[i : 1]) firstprivate(i)
            slots[i] = i * i;
        }
    }
    long ss = 0;
    for (int i = 0; i < 64; i++)
        ss += slots[i];
    printf("64 nowait targets: %ld\n", ss);
}

static void teams_and_distribute(void) {
    static int owner[N];
    long sum = 0;
    int nteams = 0;
    for (int i = 0; i < N; i++)
        owner[i] = -1;
#pragma omp target teams distribute parallel for num_teams(4) thread_limit(2) reduction(+ : sum) \
    map(tofrom : owner, nteams)
    for (int i = 0; i < N; i++) {
        owner[i] = omp_get_team_num();
        sum += i;
        if (i == 0)
            nteams = omp_get_num_teams();
    }
    int covered = 1, in_range = 1;
    for (int i = 0; i < N; i++) {
        covered &= owner[i] >= 0;
        in_range &= owner[i] < nteams;
    }
    printf("target teams distribute parallel for: sum %ld teams %d covered %d\n", sum, nteams, covered && in_range);

    /* Team numbers and the team count, in target and on the host. */
    int tl_in_target = 0, threads_ok = 1, teams_seen[8] = {0}, count_in_team = 0;
#pragma omp target teams num_teams(3) thread_limit(2) map(tofrom : tl_in_target, threads_ok, teams_seen, count_in_team)
    {
        int t = omp_get_team_num();
        teams_seen[t] = 1;
        count_in_team = omp_get_num_teams();
#pragma omp parallel
        {
#pragma omp master
            tl_in_target = omp_get_thread_limit();
            /* the threads of a parallel region in a team are in that team */
            if (omp_get_team_num() != t || omp_get_num_threads() > 2)
#pragma omp atomic write
                threads_ok = 0;
        }
    }
    printf("target teams: num_teams %d seen %d%d%d thread_limit %d parallel in team ok %d\n", count_in_team,
           teams_seen[0], teams_seen[1], teams_seen[2], tl_in_target, threads_ok);

    int host_teams = 0, host_seen[8] = {0}, host_tl = 0;
    long dsum = 0;
#pragma omp teams num_teams(4) thread_limit(3)
    {
        host_seen[omp_get_team_num()] = 1;
        if (omp_get_team_num() == 0) {
            host_teams = omp_get_num_teams();
#pragma omp parallel num_threads(1)
            host_tl = omp_get_thread_limit();
        }
#pragma omp distribute parallel for reduction(+ : dsum)
        for (int i = 0; i < N; i++)
            dsum += 2 * i;
    }
    printf("host teams: %d seen %d%d%d%d thread_limit %d distribute sum %ld\n", host_teams, host_seen[0],
           host_seen[1], host_seen[2], host_seen[3], host_tl, dsum);
    printf("after teams: num_teams %d team_num %d\n", omp_get_num_teams(), omp_get_team_num());

    /* distribute simd with dist_schedule, and a plain distribute */
    static int d[N];
#pragma omp target teams distribute dist_schedule(static, 7) map(tofrom : d) num_teams(5)
    for (int i = 0; i < N; i++)
        d[i] = omp_get_team_num() + 1;
    int all = 1;
    for (int i = 0; i < N; i++)
        all &= d[i] >= 1 && d[i] <= 5;
    printf("dist_schedule(static, 7): covered %d\n", all);
}

static void state_inside_target(void) {
    int initial_max = omp_get_max_threads();
    omp_set_num_threads(initial_max + 3); /* the encountering task's ICV, not the region's */
    int bad = 0, nested_ok = 1, counted = 0;
#pragma omp parallel num_threads(2) reduction(+ : bad, counted)
    {
        int outer_thread = omp_get_thread_num();
        int level = -1, num = -1, inpar = -1, tn = -1, maxt = -1, team_num = -1;
#pragma omp target map(from : level, num, inpar, tn, maxt, team_num) map(tofrom : nested_ok)
        {
            level = omp_get_level();
            num = omp_get_num_threads();
            inpar = omp_in_parallel();
            tn = omp_get_thread_num();
            maxt = omp_get_max_threads();
            team_num = omp_get_team_num();
#pragma omp parallel num_threads(2)
            {
                if (omp_get_level() != 1 || omp_get_ancestor_thread_num(0) != 0)
#pragma omp atomic write
                    nested_ok = 0;
            }
        }
        bad += level != 0 || num != 1 || inpar != 0 || tn != 0 || maxt != initial_max || team_num != 0;
        /* back in the parallel region */
        bad += omp_get_level() != 1 || omp_get_thread_num() != outer_thread;
        counted++;
    }
    printf("inside target from a parallel region: %d threads checked, %d wrong, nested ok %d\n", counted > 0,
           bad, nested_ok);
    omp_set_num_threads(initial_max);
    int tl = -1;
#pragma omp target thread_limit(3) map(from : tl)
    tl = omp_get_thread_limit();
    printf("target thread_limit(3): %d; outside %d\n", tl, omp_get_thread_limit() == INT_MAX);
}

static void memory_routines(void) {
    int host = omp_get_initial_device();
    int other = omp_get_num_devices() + 1;
    char *m = omp_target_alloc(64, host);
    check(m != NULL, "omp_target_alloc on the initial device");
    printf("alloc on device %d: %s; on device -5: %s\n", other, omp_target_alloc(64, other) ? "memory" : "NULL",
           omp_target_alloc(64, -5) ? "memory" : "NULL");
    const char *msg = "device memory routines";
    int r = omp_target_memcpy(m, msg, strlen(msg) + 1, 0, 0, host, host);
    printf("memcpy %d: %s\n", r, m);
    r = omp_target_memcpy(m, msg, 7, 3, 0, host, host);
    printf("memcpy with offsets %d: %s\n", r, m);
    printf("memcpy to device %d: %s; from device %d: %s\n", other,
           omp_target_memcpy(m, msg, 4, 0, 0, other, host) == EINVAL ? "EINVAL" : "other",
           other, omp_target_memcpy(m, msg, 4, 0, 0, host, other) == EINVAL ? "EINVAL" : "other");
    printf("is_present: NULL %d host %d other device %d\n", omp_target_is_present(NULL, other),
           omp_target_is_present(m, host), omp_target_is_present(m, other));
    printf("associate_ptr %s disassociate_ptr %s\n",
           omp_target_associate_ptr(msg, m, 4, 0, host) == EINVAL ? "EINVAL" : "other",
           omp_target_disassociate_ptr(msg, host) == EINVAL ? "EINVAL" : "other");
    omp_target_free(m, host);
    omp_target_free(NULL, host);

    /* a 3x4 block at (1, 2) of a 5x6 matrix into (0, 1) of a 4x5 one */
    int src[5][6], dst[4][5];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 6; j++)
            src[i][j] = 10 * i + j;
    memset(dst, 0, sizeof dst);
    size_t volume[2] = {3, 4}, dst_off[2] = {0, 1}, src_off[2] = {1, 2}, dst_dims[2] = {4, 5}, src_dims[2] = {5, 6};
    r = omp_target_memcpy_rect(dst, src, sizeof(int), 2, volume, dst_off, src_off, dst_dims, src_dims, host, host);
    printf("memcpy_rect %d:", r);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 5; j++)
            printf(" %d", dst[i][j]);
    printf("\n");
    printf("memcpy_rect(NULL, NULL) %s; to device %d %s\n",
           omp_target_memcpy_rect(NULL, NULL, 4, 2, volume, dst_off, src_off, dst_dims, src_dims, host, host) ==
                   INT_MAX
               ? "INT_MAX"
               : "other",
           other,
           omp_target_memcpy_rect(dst, src, 4, 2, volume, dst_off, src_off, dst_dims, src_dims, other, host) ==
                   EINVAL
               ? "EINVAL"
               : "other");
}

/* A nowait target outside any parallel region, ended by taskwait. Last: libgomp 12 leaves the
 * initial thread in a team of one it makes for the target task, and a later target region with
 * a nested parallel region, from a parallel region, then sometimes hangs natively. */
static void nowait_outside_parallel(void) {
    int z = 0;
#pragma omp target nowait map(tofrom : z) depend(out : z)
    z = 42;
#pragma omp taskwait
    printf("nowait outside parallel: %d\n", z);
}

int main(void) {
    device_api();
    maps_and_firstprivate();
    data_constructs();
    nowait_and_depend();
    teams_and_distribute();
    state_inside_target();
    memory_routines();
    nowait_outside_parallel();
    if (failures == 0)
        printf("all checks passed\n");
    return failures != 0;
}
