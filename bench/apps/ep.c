/* EP: "embarrassingly parallel" kernel of the NAS Parallel Benchmarks.
 * Generates 2^M pairs of uniform deviates with the NAS generator, turns the
 * pairs that fall in the unit disk into Gaussian deviates (Marsaglia polar
 * method), and tallies their sums and the counts per square annulus
 * l <= max(|X|,|Y|) < l+1. */
#include "common.h"

#define MK 16 /* a batch holds 2^MK pairs */
#define NQ 10
#define EPS 1e-8

struct batch {
	double sx, sy;
	long q[NQ];
};

struct ep_class {
	int m;
	double sx, sy;
	long q[NQ]; /* all zero: counts not checked */
};

static const struct ep_class classes[] = {
	{24, -3.247834652034740e+3, -6.958407078382297e+3,
	 {6140517, 5865300, 1100361, 68546, 1648, 17, 0, 0, 0, 0}},
	{25, -2.863319731645753e+3, -6.320053679109499e+3, {0}},
	{28, -4.295875165629892e+3, -1.580732573678431e+4,
	 {98257395, 93827014, 17611549, 1110028, 26536, 245, 0, 0, 0, 0}},
	{30, 4.033815542441498e+4, -2.660669192809235e+4, {0}},
};

static void run_batch(long k, struct batch *b)
{
	const long nk = 1L << MK;
	/* Batch k starts 2*nk*k numbers into the stream seeded with 271828183. */
	uint64_t x = lcg_skip(271828183ULL, NAS_A, (uint64_t)(2 * nk * k));
	memset(b, 0, sizeof *b);
	for (long i = 0; i < nk; i++) {
		double x1 = 2.0 * randlc(&x, NAS_A) - 1.0;
		double x2 = 2.0 * randlc(&x, NAS_A) - 1.0;
		double t = x1 * x1 + x2 * x2;
		if (t <= 1.0) {
			double f = sqrt(-2.0 * log(t) / t);
			double gx = x1 * f, gy = x2 * f;
			int l = (int)fmax(fabs(gx), fabs(gy));
			if (l < NQ)
				b->q[l]++;
			b->sx += gx;
			b->sy += gy;
		}
	}
}

int main(int argc, char **argv)
{
	int reps;
	char cls = parse_args(argc, argv, &reps);
	const struct ep_class *c = &classes[class_index(cls)];
	long nb = 1L << (c->m - MK);
	struct batch *b = xmalloc((size_t)nb * sizeof *b);
	double t[1000];
	int ok_all = 1;

	printf("# EP class %c: 2^%d pairs, %ld batches, %d threads\n", cls,
	       c->m, nb, omp_get_max_threads());
	for (int r = 0; r < reps; r++) {
		double t0 = wtime();
#pragma omp parallel for schedule(dynamic, 1)
		for (long k = 0; k < nb; k++)
			run_batch(k, &b[k]);
		/* Sum batches in a fixed order: same bits for any thread count. */
		double sx = 0, sy = 0;
		long q[NQ] = {0}, gc = 0;
		for (long k = 0; k < nb; k++) {
			sx += b[k].sx;
			sy += b[k].sy;
			for (int l = 0; l < NQ; l++)
				q[l] += b[k].q[l];
		}
		t[r] = wtime() - t0;

		for (int l = 0; l < NQ; l++)
			gc += q[l];
		int ok = check_value(r + 1, t[r], "sx", sx, c->sx, EPS);
		ok &= check_value(r + 1, t[r], "sy", sy, c->sy, EPS);
		int counts_known = c->q[0] != 0;
		if (counts_known)
			for (int l = 0; l < NQ; l++)
				ok &= q[l] == c->q[l];
		printf("#   %ld Gaussian pairs, counts %s -> %s\n", gc,
		       counts_known ? "match the published ones"
				    : "not checked (no published values)",
		       ok ? "ok" : "FAILED");
		if (r == 0)
			for (int l = 0; l < NQ; l++)
				printf("#   q[%d] = %ld\n", l, q[l]);
		ok_all = ok_all && ok;
	}
	free(b);
	return print_result("ep", cls, t, reps, ok_all);
}
