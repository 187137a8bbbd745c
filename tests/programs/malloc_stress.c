/* malloc stress: many small blocks, large blocks, realloc growth and shrink, blocks above the
 * mmap threshold (128 KiB), calloc, aligned allocation. Every block is filled with a pattern
 * that depends on its identity and checked before it is freed; everything is freed at the end.
 * Deterministic (its own random generator). Exit status 0 when every check passed. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void) {
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static int failures;

static unsigned char pat(uint64_t id, size_t i) { return (unsigned char)((id * 0x9e3779b1u + i * 31 + (i >> 9)) >> 3); }

static void fill(unsigned char *p, size_t n, uint64_t id) {
    for (size_t i = 0; i < n; i++)
        p[i] = pat(id, i);
}

static int verify(const unsigned char *p, size_t n, uint64_t id) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != pat(id, i))
            return 0;
    return 1;
}

static void report(const char *what, int ok) {
    printf("%-58s %s\n", what, ok ? "ok" : "FAILED");
    failures += !ok;
}

/* Many small blocks, allocated and freed in random order, with live-set churn. */
/* Allocates and fills a block of `size` bytes tagged `id`; returns 0 if malloc failed. */
static int new_block(unsigned char **block, size_t *size, uint64_t *tag, size_t n, uint64_t id) {
    *size = n;
    *tag = id;
    *block = malloc(n);
    if (!*block)
        return 0;
    fill(*block, n, id);
    return 1;
}

static void small_blocks(void) {
    enum { N = 20000 };
    static unsigned char *blocks[N];
    static size_t sizes[N];
    static uint64_t ids[N];
    uint64_t next_id = 0;
    int ok = 1;
    for (int i = 0; i < N; i++) {
        ok &= new_block(&blocks[i], &sizes[i], &ids[i], 1 + rng() % 256, next_id++);
    }
    /* Churn: three rounds that each free and reallocate N/2 randomly chosen blocks. */
    for (int k = 0; k < 3 * N / 2; k++) {
        int i = (int)(rng() % N);
        if (blocks[i] && !verify(blocks[i], sizes[i], ids[i]))
            ok = 0;
        free(blocks[i]);
        ok &= new_block(&blocks[i], &sizes[i], &ids[i], 1 + rng() % 512, next_id++);
    }
    /* Free in a random permutation. */
    static int order[N];
    for (int i = 0; i < N; i++)
        order[i] = i;
    for (int i = N - 1; i > 0; i--) {
        int j = (int)(rng() % (uint64_t)(i + 1));
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    for (int k = 0; k < N; k++) {
        int i = order[k];
        if (blocks[i] && !verify(blocks[i], sizes[i], ids[i]))
            ok = 0;
        free(blocks[i]);
    }
    report("20000 small blocks (1-512 bytes), 30000 replaced", ok);
}

/* Medium and large blocks below the mmap threshold. */
static void large_blocks(void) {
    enum { N = 300 };
    static unsigned char *blocks[N];
    static size_t sizes[N];
    int ok = 1;
    for (int i = 0; i < N; i++) {
        sizes[i] = 4096 + rng() % (120 * 1024);
        blocks[i] = malloc(sizes[i]);
        if (!blocks[i])
            ok = 0;
        else
            fill(blocks[i], sizes[i], 1000000u + (uint64_t)i);
    }
    for (int i = 0; i < N; i += 2) {
        if (blocks[i] && !verify(blocks[i], sizes[i], 1000000u + (uint64_t)i))
            ok = 0;
        free(blocks[i]);
        blocks[i] = NULL;
    }
    for (int i = 1; i < N; i += 2) {
        if (blocks[i] && !verify(blocks[i], sizes[i], 1000000u + (uint64_t)i))
            ok = 0;
        free(blocks[i]);
    }
    report("300 blocks of 4-124 KiB", ok);
}

/* realloc growth from 1 byte to 8 MiB by factors of 1.5 and back down, contents kept. */
static void realloc_growth(void) {
    size_t n = 1;
    unsigned char *p = malloc(n);
    int ok = p != NULL, steps = 0;
    if (p)
        fill(p, n, 77);
    while (ok && n < (8u << 20)) {
        size_t m = n + n / 2 + 1;
        unsigned char *q = realloc(p, m);
        if (!q) {
            ok = 0;
            break;
        }
        if (!verify(q, n, 77))
            ok = 0;
        fill(q + n, m - n, 0); /* overwritten below */
        fill(q, m, 77);
        p = q;
        n = m;
        steps++;
    }
    while (ok && n > 16) {
        size_t m = n / 3;
        unsigned char *q = realloc(p, m);
        if (!q) {
            ok = 0;
            break;
        }
        if (!verify(q, m, 77))
            ok = 0;
        p = q;
        n = m;
        steps++;
    }
    free(p);
    report("realloc growth to 8 MiB and shrink, contents kept", ok && steps > 40);
}

/* Blocks above the mmap threshold: 128 KiB to 16 MiB, some live at once. */
static void huge_blocks(void) {
    enum { N = 40 };
    unsigned char *blocks[N];
    size_t sizes[N];
    int ok = 1;
    for (int i = 0; i < N; i++) {
        sizes[i] = (128u << 10) + (size_t)(rng() % (16u << 20));
        if (i % 10 == 0)
            sizes[i] = (128u << 10) + 1; /* just above the threshold */
        blocks[i] = malloc(sizes[i]);
        if (!blocks[i]) {
            ok = 0;
            continue;
        }
        /* Write the first and last byte of every page and a pattern in the first 64 KiB. */
        size_t head = sizes[i] < 65536 ? sizes[i] : 65536;
        fill(blocks[i], head, 5000u + (uint64_t)i);
        for (size_t off = 65536; off < sizes[i]; off += 4096)
            blocks[i][off] = (unsigned char)(off >> 12);
        blocks[i][sizes[i] - 1] = 0xa5;
        if (i % 4 == 3) {
            /* Free some while others stay live. */
            int j = i - 2;
            size_t h = sizes[j] < 65536 ? sizes[j] : 65536;
            if (blocks[j] && !verify(blocks[j], h, 5000u + (uint64_t)j))
                ok = 0;
            free(blocks[j]);
            blocks[j] = NULL;
        }
    }
    for (int i = 0; i < N; i++) {
        if (!blocks[i])
            continue;
        size_t head = sizes[i] < 65536 ? sizes[i] : 65536;
        if (!verify(blocks[i], head, 5000u + (uint64_t)i))
            ok = 0;
        for (size_t off = 65536; off < sizes[i] - 1; off += 4096)
            if (blocks[i][off] != (unsigned char)(off >> 12))
                ok = 0;
        if (blocks[i][sizes[i] - 1] != 0xa5)
            ok = 0;
        free(blocks[i]);
    }
    report("40 blocks of 128 KiB-16 MiB (above the mmap threshold)", ok);
}

/* calloc returns zeroed memory, also when it reuses freed memory. */
static void calloc_zero(void) {
    int ok = 1;
    for (int round = 0; round < 4; round++) {
        size_t sizes[] = {24, 1000, 70000, 300000, 5u << 20};
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            unsigned char *dirty = malloc(sizes[k]);
            if (dirty)
                memset(dirty, 0xff, sizes[k]);
            free(dirty);
            unsigned char *p = calloc(1, sizes[k]);
            if (!p) {
                ok = 0;
                continue;
            }
            for (size_t i = 0; i < sizes[k]; i++)
                if (p[i]) {
                    ok = 0;
                    break;
                }
            free(p);
        }
    }
    report("calloc memory is zero, also after reuse", ok);
}

/* posix_memalign and aligned_alloc honour the alignment. */
static void aligned(void) {
    int ok = 1;
    void *ptrs[64];
    int n = 0;
    for (size_t align = 16; align <= (1u << 21); align <<= 1) {
        void *p = NULL;
        if (posix_memalign(&p, align, align * 3 + 5) != 0 || ((uintptr_t)p & (align - 1)) != 0)
            ok = 0;
        else
            memset(p, 0x5a, align * 3 + 5);
        ptrs[n++] = p;
        void *q = aligned_alloc(align, align * 2);
        if (!q || ((uintptr_t)q & (align - 1)) != 0)
            ok = 0;
        ptrs[n++] = q;
    }
    for (int i = 0; i < n; i++)
        free(ptrs[i]);
    report("posix_memalign/aligned_alloc alignments 16 B-2 MiB", ok);
}

/* A request that cannot be satisfied gives NULL, not a crash. */
static void impossible(void) {
    void *p = malloc(SIZE_MAX / 2);
    report("malloc(SIZE_MAX/2) returns NULL", p == NULL);
    free(p);
}

int main(void) {
    small_blocks();
    large_blocks();
    realloc_growth();
    huge_blocks();
    calloc_zero();
    aligned();
    impossible();
    printf("random state %016llx\n", (unsigned long long)rng());
    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
