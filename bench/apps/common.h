/* Shared helpers for the NAS-style application kernels (ep, cg, is, mg):
 * timer, the NAS linear congruential generator, argument parsing and the
 * RESULT line (format: /work/notes/bench-format.md). Header-only so each
 * kernel builds from a single .c file. */
#ifndef HRT_APPS_COMMON_H
#define HRT_APPS_COMMON_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <omp.h>

static inline double wtime(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* NAS generator: x_{k+1} = a * x_k mod 2^46, value x / 2^46.
 * 2^46 divides 2^64, so the low 46 bits of the wrapping 64-bit product are
 * exactly the product mod 2^46: integer arithmetic gives the same sequence
 * as the reference double-precision formulation, bit for bit. */
#define NAS_A 1220703125ULL /* 5^13 */
#define LCG_MASK ((1ULL << 46) - 1)
#define LCG_SCALE (1.0 / 70368744177664.0) /* 2^-46 */

static inline double randlc(uint64_t *x, uint64_t a)
{
	*x = (*x * a) & LCG_MASK;
	return (double)*x * LCG_SCALE;
}

static inline void vranlc(long n, uint64_t *x, uint64_t a, double *y)
{
	uint64_t s = *x;
	for (long i = 0; i < n; i++) {
		s = (s * a) & LCG_MASK;
		y[i] = (double)s * LCG_SCALE;
	}
	*x = s;
}

/* a^n mod 2^46, used to jump a stream ahead so threads can start anywhere. */
static inline uint64_t lcg_pow(uint64_t a, uint64_t n)
{
	uint64_t r = 1;
	while (n) {
		if (n & 1)
			r = (r * a) & LCG_MASK;
		a = (a * a) & LCG_MASK;
		n >>= 1;
	}
	return r;
}

/* Seed that yields, as its next value, the (n+1)-th value after seed. */
static inline uint64_t lcg_skip(uint64_t seed, uint64_t a, uint64_t n)
{
	return (seed * lcg_pow(a, n)) & LCG_MASK;
}

/* PROG [S|W|A|B] [REPS]; returns the class letter, sets *reps. */
static inline char parse_args(int argc, char **argv, int *reps)
{
	char cls = 'S';
	*reps = 3;
	if (argc > 3)
		goto usage;
	if (argc > 1) {
		if (strlen(argv[1]) != 1)
			goto usage;
		cls = argv[1][0];
		if (cls >= 'a' && cls <= 'z')
			cls = (char)(cls - 'a' + 'A');
		if (cls != 'S' && cls != 'W' && cls != 'A' && cls != 'B')
			goto usage;
	}
	if (argc > 2) {
		char *end;
		long r = strtol(argv[2], &end, 10);
		if (*end || r < 1 || r > 1000)
			goto usage;
		*reps = (int)r;
	}
	return cls;
usage:
	fprintf(stderr, "usage: %s [S|W|A|B] [REPS]\n", argv[0]);
	exit(2);
}

/* Index of class cls (from parse_args) in a kernel's S, W, A, B table. */
static inline int class_index(char cls)
{
	return cls == 'S' ? 0 : cls == 'W' ? 1 : cls == 'A' ? 2 : 3;
}

static inline void *xmalloc(size_t n)
{
	void *p = malloc(n);
	if (!p) {
		fprintf(stderr, "out of memory (%zu bytes)\n", n);
		exit(2);
	}
	return p;
}

/* Prints the '#' line of one timed run that checks one value against its
 * published reference with relative tolerance eps; returns 1 if within. */
static inline int check_value(int run, double secs, const char *what,
			      double got, double want, double eps)
{
	double err = fabs((got - want) / want);
	int ok = err <= eps;
	printf("# run %d: %.3f s  %s=%.15e (reference %.15e, rel err %.1e) "
	       "-> %s\n",
	       run, secs, what, got, want, err, ok ? "ok" : "FAILED");
	return ok;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Prints the RESULT line for n timed runs; returns the exit status. */
static inline int print_result(const char *kernel, char cls, const double *t,
			       int n, int verified)
{
	double s[1000];
	memcpy(s, t, (size_t)n * sizeof *s);
	qsort(s, (size_t)n, sizeof *s, cmp_double);
	double med = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
	printf("RESULT suite=apps name=%s.%c unit=s min=%.6f median=%.6f "
	       "max=%.6f n=%d threads=%d class=%c verified=%s\n",
	       kernel, cls, s[0], med, s[n - 1], n, omp_get_max_threads(), cls,
	       verified ? "yes" : "no");
	return verified ? 0 : 1;
}

#endif
