// Waits that sleep at once (OMP_WAIT_POLICY=passive, set by running itself again): doacross
// loops up and down under dynamic and static schedules, whose posts must wake a thread that
// went to sleep just then, and a barrier between them; then an allocator's pool, which counts
// a block as libgomp does (its header and alignment padding too).
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 50

static long up(int dynamic) {
    long a[N] = {0}, total = 0;
    for (int rep = 0; rep < 200; rep++) {
        if (dynamic) {
#pragma omp parallel for ordered(1) schedule(dynamic)
            for (int i = 1; i < N; i++) {
#pragma omp ordered depend(sink : i - 1)
                a[i] = a[i - 1] + i + rep;
#pragma omp ordered depend(source)
            }
        } else {
#pragma omp parallel for ordered(1) schedule(static, 1)
            for (int i = 1; i < N; i++) {
#pragma omp ordered depend(sink : i - 1)
                a[i] = a[i - 1] + i + rep;
#pragma omp ordered depend(source)
            }
        }
        total += a[N - 1];
    }
    return total;
}

static long down(void) {
    long a[N + 1] = {0}, total = 0;
    for (int rep = 0; rep < 200; rep++) {
#pragma omp parallel for ordered(1) schedule(dynamic)
        for (int i = N - 1; i >= 0; i--) {
#pragma omp ordered depend(sink : i + 1)
            a[i] = a[i + 1] * 3 % 1000003 + i;
#pragma omp ordered depend(source)
        }
        total += a[0];
    }
    return total;
}

static void pool(size_t size, size_t align, size_t first) {
    omp_alloctrait_t traits[] = {{omp_atk_pool_size, 8192}, {omp_atk_alignment, align}, {omp_atk_fallback, omp_atv_null_fb}};
    omp_allocator_handle_t a = omp_init_allocator(omp_default_mem_space, 3, traits);
    void *p = first ? omp_alloc(first, a) : NULL;
    void *q = omp_alloc(size, a);
    printf("pool 8192, alignment %zu, %zu then %zu bytes: %s\n", align, first, size, q ? "granted" : "refused");
    omp_free(q, a);
    omp_free(p, a);
    omp_destroy_allocator(a);
}

int main(int argc, char **argv) {
    (void)argc;
    if (!getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);
        perror("execv");
        return 1;
    }
    printf("up, dynamic: %ld\n", up(1));
    printf("up, static: %ld\n", up(0));
    printf("down: %ld\n", down());
    pool(8192, 1, 0);
    pool(8160, 1, 0);
    pool(8161, 1, 0);
    pool(4096, 4096, 0);
    pool(4000, 4096, 100);
    pool(8000, 64, 0);
    printf("passive waits: all checks passed\n");
    return 0;
}
