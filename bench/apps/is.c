/* IS: integer sort kernel of the NAS Parallel Benchmarks.
 * Ranks N integer keys in [0, Bmax) (keys are sums of four uniform
 * deviates, so roughly Gaussian) ten times, modifying two keys before each
 * ranking. Ranking is a counting sort: per-thread histograms, summed and
 * prefix-summed into "number of keys <= k".
 * Verification: the ranks of five fixed keys in every iteration (partial,
 * published values) and, after the last iteration, that ordering the keys
 * by the computed ranks yields a sorted sequence (full). */
#include "common.h"

#define ITERATIONS 10
#define NTEST 5

struct is_class {
	int log_keys, log_max;
	long index[NTEST], rank[NTEST];
};

static const struct is_class classes[] = {
	{16, 11, {48427, 17148, 23627, 62548, 4431}, {0, 18, 346, 64917, 65463}},
	{20, 16, {357773, 934767, 875723, 898999, 404505},
	 {1249, 11698, 1039987, 1043896, 1048018}},
	{23, 19, {2112377, 662041, 5336171, 3642833, 4250760},
	 {104, 17523, 123928, 8288932, 8388264}},
	{25, 21, {41869, 812306, 5102857, 18232239, 26860214},
	 {33422937, 10244, 59149, 33135281, 99}},
};

static char cls;
static const struct is_class *c;
static long nkeys, maxkey;
static int *key;      /* the keys */
static long *cum;     /* cum[k] = number of keys <= k */
static long *hist;    /* nthreads histograms of maxkey counts */
static int nthreads;

static void create_keys(void)
{
	double k4 = (double)(maxkey / 4);
#pragma omp parallel
	{
		int t = omp_get_thread_num(), nt = omp_get_num_threads();
		long lo = nkeys * t / nt, hi = nkeys * (t + 1) / nt;
		/* Each key consumes four numbers of the stream. */
		uint64_t s = lcg_skip(314159265ULL, NAS_A, 4 * (uint64_t)lo);
		for (long i = lo; i < hi; i++) {
			double x = randlc(&s, NAS_A);
			x += randlc(&s, NAS_A);
			x += randlc(&s, NAS_A);
			x += randlc(&s, NAS_A);
			key[i] = (int)(k4 * x);
		}
	}
}

/* The published ranks move by a class-specific offset per iteration. */
static long expected_rank(int i, int it)
{
	long r = c->rank[i];
	switch (cls) {
	case 'S':
		return i <= 2 ? r + it : r - it;
	case 'W':
		return i < 2 ? r + (it - 2) : r - it;
	case 'B':
		return i == 1 || i == 2 || i == 4 ? r + it : r - it;
	default:
		return i <= 2 ? r + (it - 1) : r - (it - 1);
	}
}

/* One NAS iteration; returns the number of partial checks that passed. */
static int rank_keys(int it)
{
	long probe[NTEST];
	key[it] = it;
	key[it + ITERATIONS] = (int)(maxkey - it);
	for (int i = 0; i < NTEST; i++)
		probe[i] = key[c->index[i]];

#pragma omp parallel
	{
		int t = omp_get_thread_num();
		long *h = hist + (long)t * maxkey;
		memset(h, 0, (size_t)maxkey * sizeof *h);
#pragma omp for schedule(static)
		for (long i = 0; i < nkeys; i++)
			h[key[i]]++;
		/* implicit barrier: all histograms complete */
#pragma omp for schedule(static)
		for (long k = 0; k < maxkey; k++) {
			long s = 0;
			for (int u = 0; u < nthreads; u++)
				s += hist[(long)u * maxkey + k];
			cum[k] = s;
		}
	}
	for (long k = 1; k < maxkey; k++)
		cum[k] += cum[k - 1];

	int passed = 0;
	for (int i = 0; i < NTEST; i++) {
		long k = probe[i];
		if (k > 0 && k <= nkeys - 1)
			passed += cum[k - 1] == expected_rank(i, it);
	}
	return passed;
}

/* Places every key at the position given by its rank; checks sortedness. */
static long full_verify(void)
{
	int *sorted = xmalloc((size_t)nkeys * sizeof *sorted);
	long bad = 0;
	for (long i = nkeys - 1; i >= 0; i--)
		sorted[--cum[key[i]]] = key[i];
	for (long i = 1; i < nkeys; i++)
		bad += sorted[i - 1] > sorted[i];
	free(sorted);
	return bad;
}

int main(int argc, char **argv)
{
	int reps;
	double t[1000];
	int ok_all = 1;

	cls = parse_args(argc, argv, &reps);
	c = &classes[class_index(cls)];
	nkeys = 1L << c->log_keys;
	maxkey = 1L << c->log_max;
	nthreads = omp_get_max_threads();
	key = xmalloc((size_t)nkeys * sizeof *key);
	cum = xmalloc((size_t)maxkey * sizeof *cum);
	hist = xmalloc((size_t)nthreads * (size_t)maxkey * sizeof *hist);
	printf("# IS class %c: 2^%d keys in [0, 2^%d), %d iterations, %d "
	       "threads\n",
	       cls, c->log_keys, c->log_max, ITERATIONS, nthreads);

	create_keys();
	rank_keys(1); /* untimed warm-up, as in NAS */
	for (int r = 0; r < reps; r++) {
		create_keys(); /* iterations modify keys: start each run fresh */
		int passed = 0;
		double t0 = wtime();
		for (int it = 1; it <= ITERATIONS; it++)
			passed += rank_keys(it);
		t[r] = wtime() - t0;
		long bad = full_verify();
		int ok = passed == NTEST * ITERATIONS && bad == 0;
		printf("# run %d: %.3f s  partial %d/%d, full %s -> %s\n", r + 1,
		       t[r], passed, NTEST * ITERATIONS,
		       bad ? "unsorted" : "sorted", ok ? "ok" : "FAILED");
		ok_all = ok_all && ok;
	}
	return print_result("is", cls, t, reps, ok_all);
}
