/* Shared helpers of HRT's C benchmark programs: the TSC, a monotonic clock, and the one
 * RESULT line per result that /work/notes/bench-format.md defines (also in bench/README.md):
 *
 *   RESULT suite=S name=N unit=U min=X median=X max=X n=K [key=value ...]
 *
 * Header-only (static functions) so each program stays a single `gcc -static` compile. */
#ifndef HRT_BENCH_H
#define HRT_BENCH_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* rdtsc fenced on both sides: earlier instructions finish before it, later ones start after. */
static inline uint64_t bench_tsc(void) {
    uint32_t lo, hi;
    __asm__ volatile("lfence\n\trdtsc\n\tlfence" : "=a"(lo), "=d"(hi)::"memory");
    return ((uint64_t)hi << 32) | lo;
}

/* CLOCK_MONOTONIC in seconds (the vDSO in HRT and on Linux). */
static inline double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void bench_pause(void) { __asm__ volatile("pause" ::: "memory"); }

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v[0..n) and prints one RESULT line. `extra` holds optional keys ("threads=2", or ""),
 * printed after n= and before p999=/spread= when those are asked for. */
static inline void bench_result_opts(const char *suite, const char *name, const char *unit, double *v,
                              size_t n, const char *extra, int with_p999, int with_spread) {
    if (n == 0) {
        fprintf(stderr, "%s: no samples\n", name);
        return;
    }
    qsort(v, n, sizeof *v, bench_cmp_double);
    double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    printf("RESULT suite=%s name=%s unit=%s min=%.4f median=%.4f max=%.4f n=%zu", suite, name,
           unit, v[0], med, v[n - 1], n);
    if (extra && *extra)
        printf(" %s", extra);
    if (with_p999) {
        size_t k = (size_t)((double)n * 0.999 + 0.999999);
        printf(" p999=%.4f", v[(k ? k : 1) - 1]);
    }
    if (with_spread && v[0] > 0)
        printf(" spread=%.3f", (v[n - 1] - v[0]) / v[0]);
    printf("\n");
    fflush(stdout);
}

static inline void bench_result(const char *suite, const char *name, const char *unit, double *v,
                         size_t n, const char *extra) {
    bench_result_opts(suite, name, unit, v, n, extra, n >= 1000, 0);
}

static inline void *bench_alloc(size_t n) {
    void *p = calloc(n ? n : 1, 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

/* TSC ticks per second, measured against CLOCK_MONOTONIC over ~20 ms. */
static inline double bench_tsc_hz(void) {
    double t0 = bench_now();
    uint64_t c0 = bench_tsc();
    while (bench_now() - t0 < 0.02)
        ;
    uint64_t c1 = bench_tsc();
    double t1 = bench_now();
    return (double)(c1 - c0) / (t1 - t0);
}

#endif
