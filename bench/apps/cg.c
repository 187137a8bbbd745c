/* CG: conjugate-gradient kernel of the NAS Parallel Benchmarks.
 * Estimates the smallest eigenvalue of a large sparse symmetric positive
 * definite matrix with inverse power iteration; each outer step solves
 * A z = x approximately with 25 unpreconditioned CG iterations, then
 * zeta = shift + 1 / (x . z) and x = z / ||z||.
 * The matrix is the NAS one: a weighted sum of outer products of random
 * sparse vectors, generated with the NAS random number generator, so zeta
 * can be checked against the published value. */
#include "common.h"

#define CGIT 25
#define RCOND 0.1
#define EPS 1e-10

struct cg_class {
	int na, nonzer, niter;
	double shift, zeta;
};

static const struct cg_class classes[] = {
	{1400, 7, 15, 10.0, 8.5971775078648},
	{7000, 8, 15, 12.0, 10.362595087124},
	{14000, 11, 15, 20.0, 17.130235054029},
	{75000, 13, 75, 60.0, 22.712745482631},
};

/* The matrix in compressed sparse row form, 0-based. */
static int n;
static int *rowptr, *col;
static double *val;

/* Generates the sparse vector of one outer product: nz distinct random
 * positions in 1..n with random values, drawn two numbers at a time (value,
 * position) from the shared stream. */
static void random_sparse_vector(uint64_t *seed, int nz, int pow2,
				 double *v, int *iv)
{
	int k = 0;
	while (k < nz) {
		double value = randlc(seed, NAS_A);
		double where = randlc(seed, NAS_A);
		int i = (int)(pow2 * where) + 1;
		if (i > n)
			continue;
		int dup = 0;
		for (int j = 0; j < k; j++)
			dup |= iv[j] == i;
		if (dup)
			continue;
		v[k] = value;
		iv[k] = i;
		k++;
	}
}

struct entry {
	int col;
	double val;
};

static int cmp_entry(const void *a, const void *b)
{
	return ((const struct entry *)a)->col - ((const struct entry *)b)->col;
}

/* A = sum_i size_i * w_i w_i^T + (rcond - shift) I, where w_i is a random
 * sparse vector with element i set to 0.5 and size_i = rcond^(i/n).
 * Duplicate entries are summed in generation order. */
static void make_matrix(const struct cg_class *c)
{
	int nzmax = c->nonzer + 1;
	long ntrip = (long)n * nzmax * nzmax;
	int *trow = xmalloc((size_t)ntrip * sizeof *trow);
	int *tcol = xmalloc((size_t)ntrip * sizeof *tcol);
	double *tval = xmalloc((size_t)ntrip * sizeof *tval);
	double v[64];
	int iv[64];
	int pow2 = 1;
	while (pow2 < n)
		pow2 *= 2;

	uint64_t seed = 314159265ULL;
	randlc(&seed, NAS_A); /* the first number is consumed by the setup */
	double size = 1.0, ratio = pow(RCOND, 1.0 / n);
	long nt = 0;
	for (int i = 1; i <= n; i++) {
		int nz = c->nonzer;
		random_sparse_vector(&seed, nz, pow2, v, iv);
		int have = 0;
		for (int k = 0; k < nz; k++)
			if (iv[k] == i) {
				v[k] = 0.5;
				have = 1;
			}
		if (!have) {
			v[nz] = 0.5;
			iv[nz] = i;
			nz++;
		}
		for (int a = 0; a < nz; a++) {
			double scale = size * v[a];
			for (int b = 0; b < nz; b++) {
				double x = v[b] * scale;
				if (iv[a] == i && iv[b] == i)
					x += RCOND - c->shift;
				trow[nt] = iv[a] - 1;
				tcol[nt] = iv[b] - 1;
				tval[nt] = x;
				nt++;
			}
		}
		size *= ratio;
	}

	/* Stable bucket sort of the triples by row. */
	int *start = calloc((size_t)n + 1, sizeof *start);
	int *order = xmalloc((size_t)nt * sizeof *order);
	for (long t = 0; t < nt; t++)
		start[trow[t] + 1]++;
	for (int r = 0; r < n; r++)
		start[r + 1] += start[r];
	int *fill = xmalloc((size_t)n * sizeof *fill);
	memcpy(fill, start, (size_t)n * sizeof *fill);
	for (long t = 0; t < nt; t++)
		order[fill[trow[t]]++] = (int)t;

	/* Merge duplicates per row, then sort the row by column. */
	rowptr = xmalloc(((size_t)n + 1) * sizeof *rowptr);
	col = xmalloc((size_t)nt * sizeof *col);
	val = xmalloc((size_t)nt * sizeof *val);
	int *slot = xmalloc((size_t)n * sizeof *slot);
	struct entry *row = xmalloc((size_t)n * sizeof *row);
	for (int j = 0; j < n; j++)
		slot[j] = -1;
	long nnz = 0;
	for (int r = 0; r < n; r++) {
		int len = 0;
		for (int p = start[r]; p < start[r + 1]; p++) {
			int t = order[p];
			int j = tcol[t];
			if (slot[j] < 0) {
				slot[j] = len;
				row[len].col = j;
				row[len].val = 0.0;
				len++;
			}
			row[slot[j]].val += tval[t];
		}
		qsort(row, (size_t)len, sizeof *row, cmp_entry);
		rowptr[r] = (int)nnz;
		for (int k = 0; k < len; k++) {
			slot[row[k].col] = -1;
			col[nnz] = row[k].col;
			val[nnz] = row[k].val;
			nnz++;
		}
	}
	rowptr[n] = (int)nnz;
	printf("# matrix: n=%d, %ld generated entries, %ld nonzeros\n", n, nt,
	       nnz);
	free(trow);
	free(tcol);
	free(tval);
	free(start);
	free(order);
	free(fill);
	free(slot);
	free(row);
}

/* Vectors of the solver. */
static double *x, *z, *p, *q, *r;

/* y = A v; returns v . y */
static double spmv_dot(const double *v, double *y)
{
	double d = 0.0;
#pragma omp parallel for reduction(+ : d) schedule(static)
	for (int i = 0; i < n; i++) {
		double s = 0.0;
		for (int k = rowptr[i]; k < rowptr[i + 1]; k++)
			s += val[k] * v[col[k]];
		y[i] = s;
		d += v[i] * s;
	}
	return d;
}

/* 25 CG iterations on A z = x from z = 0; returns ||x - A z||. */
static double conj_grad(void)
{
	double rho = 0.0;
#pragma omp parallel for reduction(+ : rho) schedule(static)
	for (int i = 0; i < n; i++) {
		z[i] = 0.0;
		r[i] = x[i];
		p[i] = x[i];
		rho += x[i] * x[i];
	}
	for (int it = 0; it < CGIT; it++) {
		double alpha = rho / spmv_dot(p, q);
		double rho0 = rho;
		rho = 0.0;
#pragma omp parallel for reduction(+ : rho) schedule(static)
		for (int i = 0; i < n; i++) {
			z[i] += alpha * p[i];
			r[i] -= alpha * q[i];
			rho += r[i] * r[i];
		}
		double beta = rho / rho0;
#pragma omp parallel for schedule(static)
		for (int i = 0; i < n; i++)
			p[i] = r[i] + beta * p[i];
	}
	spmv_dot(z, r); /* r = A z */
	double sum = 0.0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
	for (int i = 0; i < n; i++)
		sum += (x[i] - r[i]) * (x[i] - r[i]);
	return sqrt(sum);
}

/* One inverse power step: returns zeta, replaces x by z / ||z||. */
static double power_step(double shift, double *rnorm)
{
	*rnorm = conj_grad();
	double xz = 0.0, zz = 0.0;
#pragma omp parallel for reduction(+ : xz, zz) schedule(static)
	for (int i = 0; i < n; i++) {
		xz += x[i] * z[i];
		zz += z[i] * z[i];
	}
	double s = 1.0 / sqrt(zz);
#pragma omp parallel for schedule(static)
	for (int i = 0; i < n; i++)
		x[i] = s * z[i];
	return shift + 1.0 / xz;
}

static void reset_x(void)
{
	for (int i = 0; i < n; i++)
		x[i] = 1.0;
}

int main(int argc, char **argv)
{
	int reps;
	char cls = parse_args(argc, argv, &reps);
	const struct cg_class *c = &classes[class_index(cls)];
	double t[1000], rnorm, zeta = 0.0;
	int ok_all = 1;

	n = c->na;
	printf("# CG class %c: n=%d nonzer=%d shift=%g, %d threads\n", cls, n,
	       c->nonzer, c->shift, omp_get_max_threads());
	make_matrix(c);
	x = xmalloc((size_t)n * sizeof *x);
	z = xmalloc((size_t)n * sizeof *z);
	p = xmalloc((size_t)n * sizeof *p);
	q = xmalloc((size_t)n * sizeof *q);
	r = xmalloc((size_t)n * sizeof *r);
	reset_x();
	power_step(c->shift, &rnorm); /* untimed warm-up, as in NAS */

	for (int rep = 0; rep < reps; rep++) {
		reset_x();
		double t0 = wtime();
		for (int it = 0; it < c->niter; it++)
			zeta = power_step(c->shift, &rnorm);
		t[rep] = wtime() - t0;
		ok_all &= check_value(rep + 1, t[rep], "zeta", zeta, c->zeta, EPS);
		printf("#   final ||x - A z|| = %.6e\n", rnorm);
	}
	return print_result("cg", cls, t, reps, ok_all);
}
