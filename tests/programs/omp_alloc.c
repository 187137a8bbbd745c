// Memory allocators (OpenMP 5.1, 2.13 and 3.13): the predefined allocators, omp_init_allocator
// with alignment, pool_size and fallback traits, def-allocator-var (OMP_ALLOCATOR and
// omp_set/get_default_allocator), and omp_alloc, omp_aligned_alloc, omp_calloc,
// omp_aligned_calloc, omp_realloc, omp_free, also from the threads of a region, and the
// `allocate` clause. Prints what
// the specification fixes (alignment, contents, which requests fail); compared with libgomp.
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int failures;

static void check(const char *what, int ok) {
    printf("%s: %s\n", what, ok ? "ok" : "wrong");
    failures += !ok;
}

static int aligned(void *p, size_t a) { return p && (uintptr_t)p % a == 0; }

static int zeroed(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

int main(void) {
    printf("default allocator is omp_default_mem_alloc: %d\n",
           omp_get_default_allocator() == omp_default_mem_alloc);
    printf("default allocator is omp_low_lat_mem_alloc: %d\n",
           omp_get_default_allocator() == omp_low_lat_mem_alloc);

    int *a = omp_alloc(1000 * sizeof(int), omp_default_mem_alloc);
    for (int i = 0; i < 1000; i++) a[i] = i;
    check("omp_alloc", a != NULL && a[999] == 999);
    a = omp_realloc(a, 4000 * sizeof(int), omp_null_allocator, omp_null_allocator);
    int kept = 1;
    for (int i = 0; i < 1000; i++) kept &= a[i] == i;
    a[3999] = 1;
    check("omp_realloc keeps the contents", a != NULL && kept);
    a = omp_realloc(a, 10 * sizeof(int), omp_large_cap_mem_alloc, omp_default_mem_alloc);
    kept = 1;
    for (int i = 0; i < 10; i++) kept &= a[i] == i;
    check("omp_realloc to fewer bytes, another allocator", a != NULL && kept);
    omp_free(a, omp_large_cap_mem_alloc);
    omp_free(NULL, omp_default_mem_alloc);
    check("omp_alloc of 0 bytes", omp_alloc(0, omp_default_mem_alloc) == NULL);
    check("omp_realloc to 0 bytes frees", omp_realloc(omp_alloc(8, omp_default_mem_alloc), 0,
                                                      omp_default_mem_alloc, omp_default_mem_alloc) == NULL);

    void *p = omp_aligned_alloc(256, 100, omp_default_mem_alloc);
    check("omp_aligned_alloc 256", aligned(p, 256));
    omp_free(p, omp_default_mem_alloc);
    unsigned char *c = omp_calloc(300, 7, omp_high_bw_mem_alloc);
    check("omp_calloc zeroes", c && zeroed(c, 2100));
    omp_free(c, omp_high_bw_mem_alloc);
    c = omp_aligned_calloc(64, 1024, 4, omp_default_mem_alloc);
    check("omp_aligned_calloc 64, zeroed", aligned(c, 64) && zeroed(c, 4096));
    omp_free(c, omp_default_mem_alloc);

    omp_alloctrait_t align_traits[] = {{omp_atk_alignment, 4096}};
    omp_allocator_handle_t al = omp_init_allocator(omp_default_mem_space, 1, align_traits);
    check("an allocator with alignment 4096", al != omp_null_allocator);
    int ok = 1;
    for (int i = 0; i < 20; i++) {
        void *q = omp_alloc(10 + i * 100, al);
        ok &= aligned(q, 4096);
        omp_free(q, al);
    }
    check("its blocks are aligned", ok);
    omp_destroy_allocator(al);

    omp_alloctrait_t bad_align[] = {{omp_atk_alignment, 24}};
    check("alignment 24 is refused",
          omp_init_allocator(omp_default_mem_space, 1, bad_align) == omp_null_allocator);

    omp_alloctrait_t pool_null[] = {{omp_atk_pool_size, 4096}, {omp_atk_fallback, omp_atv_null_fb}};
    omp_allocator_handle_t small = omp_init_allocator(omp_default_mem_space, 2, pool_null);
    void *b1 = omp_alloc(3000, small);
    void *b2 = omp_alloc(3000, small);
    check("a pool of 4096 bytes serves 3000", b1 != NULL);
    check("but not 3000 more (null_fb)", b2 == NULL);
    omp_free(b1, small);
    b2 = omp_alloc(3000, small);
    check("after a free it serves 3000 again", b2 != NULL);
    omp_free(b2, small);

    omp_alloctrait_t pool_default[] = {{omp_atk_pool_size, 1024}, {omp_atk_fallback, omp_atv_default_mem_fb}};
    omp_allocator_handle_t fb = omp_init_allocator(omp_default_mem_space, 2, pool_default);
    void *big = omp_alloc(100000, fb);
    check("default_mem_fb serves beyond the pool", big != NULL);
    omp_free(big, fb);
    omp_alloctrait_t pool_other[] = {{omp_atk_pool_size, 1024},
                                     {omp_atk_fallback, omp_atv_allocator_fb},
                                     {omp_atk_fb_data, (omp_uintptr_t)omp_default_mem_alloc}};
    omp_allocator_handle_t other = omp_init_allocator(omp_default_mem_space, 3, pool_other);
    big = omp_alloc(100000, other);
    check("allocator_fb serves beyond the pool", big != NULL);
    omp_free(big, other);
    omp_destroy_allocator(small);
    omp_destroy_allocator(fb);
    omp_destroy_allocator(other);

    omp_set_default_allocator(omp_low_lat_mem_alloc);
    printf("after setting: omp_low_lat_mem_alloc %d\n", omp_get_default_allocator() == omp_low_lat_mem_alloc);
    p = omp_alloc(64, omp_null_allocator);
    check("omp_null_allocator uses the default one", p != NULL);
    omp_free(p, omp_null_allocator);
    omp_set_default_allocator(omp_default_mem_alloc);

    int wrong = 0;
#pragma omp parallel reduction(+ : wrong)
    for (int r = 0; r < 200; r++) {
        int n = 1 + (r * 37 + omp_get_thread_num() * 11) % 500;
        long *v = omp_aligned_alloc(128, n * sizeof(long), omp_thread_mem_alloc);
        for (int i = 0; i < n; i++) v[i] = i + omp_get_thread_num();
        for (int i = 0; i < n; i++) wrong += v[i] != i + omp_get_thread_num();
        wrong += !aligned(v, 128);
        omp_free(v, omp_thread_mem_alloc);
    }
    check("allocations from every thread", wrong == 0);

    // The allocate clause: each thread's private copy comes from the allocator (GOMP_alloc).
    long priv[64];
    int bad = 0;
#pragma omp parallel private(priv) allocate(omp_low_lat_mem_alloc : priv) reduction(+ : bad)
    {
        for (int i = 0; i < 64; i++) priv[i] = i * omp_get_thread_num();
        for (int i = 0; i < 64; i++) bad += priv[i] != i * omp_get_thread_num();
    }
    check("the allocate clause", bad == 0);

    // libgomp 12 has no pinned and no high-bandwidth memory: such allocators are none, while
    // the predefined high_bw allocator still gives ordinary memory.
    omp_alloctrait_t pin[1] = {{omp_atk_pinned, omp_atv_true}};
    omp_alloctrait_t nopin[1] = {{omp_atk_pinned, omp_atv_false}};
    check("no high_bw memory space allocator", omp_init_allocator(omp_high_bw_mem_space, 0, NULL) == omp_null_allocator);
    check("no pinned allocator", omp_init_allocator(omp_default_mem_space, 1, pin) == omp_null_allocator);
    omp_allocator_handle_t unpinned = omp_init_allocator(omp_default_mem_space, 1, nopin);
    check("an allocator not pinned", unpinned != omp_null_allocator);
    omp_destroy_allocator(unpinned);
    void *hb = omp_alloc(100, omp_high_bw_mem_alloc);
    check("the predefined high_bw allocator gives memory", hb != NULL);
    omp_free(hb, omp_high_bw_mem_alloc);
    if (failures == 0) printf("all checks passed\n");
    return failures != 0;
}
