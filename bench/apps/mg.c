/* MG: multigrid kernel of the NAS Parallel Benchmarks.
 * Approximates the solution of the discrete Poisson problem A u = v on an
 * n^3 periodic grid with nit V-cycles (restriction P, smoother S,
 * prolongation Q, residual A: all 27-point stencils whose coefficients
 * depend only on the distance class center/face/edge/corner). v is zero
 * except +1 at the ten largest and -1 at the ten smallest of n^3 numbers
 * from the NAS generator. The L2 norm of the final residual is checked
 * against the published value. */
#include "common.h"

#define MAXLEVEL 8 /* 2^8 = 256 points per side (class A) */
#define MAXD ((1 << MAXLEVEL) + 2)
#define EPS 1e-8

/* Smoother weights: NAS uses S(a) for classes S, W, A and S(b) from B on. */
static const double S_a[4] = {-3.0 / 8.0, 1.0 / 32.0, -1.0 / 64.0, 0.0};
static const double S_b[4] = {-3.0 / 17.0, 1.0 / 33.0, -1.0 / 61.0, 0.0};

struct mg_class {
	int level, nit;
	double norm;
	const double *smoother;
};

static const struct mg_class classes[] = {
	{5, 4, 0.5307707005734e-04, S_a},
	{7, 4, 0.6467329375339e-05, S_a},
	{8, 4, 0.2433365309069e-05, S_a},
	{8, 20, 0.1800564401355e-05, S_b},
};

/* Stencil weights for center, face, edge and corner neighbours. */
static const double A_op[4] = {-8.0 / 3.0, 0.0, 1.0 / 6.0, 1.0 / 12.0};
static const double P_op[4] = {0.5, 0.25, 0.125, 0.0625};

/* Level k has m = 2^k interior points per side, stored with one ghost
 * layer on each side (indices 0 and m+1) that mirrors the periodic
 * neighbours, so stencils never need wrap-around arithmetic. */
static double *u[MAXLEVEL + 1], *r[MAXLEVEL + 1], *v;

static inline long ix(int m, int i3, int i2, int i1)
{
	long d = m + 2;
	return ((long)i3 * d + i2) * d + i1;
}

static long cells(int m)
{
	long d = m + 2;
	return d * d * d;
}

/* Refreshes the ghost layers of a from the opposite interior faces. */
static void comm3(double *a, int m)
{
	long d = m + 2;
#pragma omp parallel for schedule(static) if (m >= 16)
	for (int i3 = 1; i3 <= m; i3++) {
		for (int i2 = 1; i2 <= m; i2++) {
			double *row = a + ix(m, i3, i2, 0);
			row[0] = row[m];
			row[m + 1] = row[1];
		}
		memcpy(a + ix(m, i3, 0, 0), a + ix(m, i3, m, 0), d * sizeof *a);
		memcpy(a + ix(m, i3, m + 1, 0), a + ix(m, i3, 1, 0),
		       d * sizeof *a);
	}
	memcpy(a, a + ix(m, m, 0, 0), d * d * sizeof *a);
	memcpy(a + ix(m, m + 1, 0, 0), a + ix(m, 1, 0, 0), d * d * sizeof *a);
}

/* out[i1] = w . (center, faces, edges, corners) of a around (i3,i2,i1),
 * for i1 = 1..m. Sums over the four (i2,i3)-neighbours are shared by
 * adjacent points of the row, which saves most additions. */
static void stencil_row(const double *a, int m, int i3, int i2,
			const double w[4], double *out)
{
	long d = m + 2, dd = d * d;
	const double *p = a + ix(m, i3, i2, 0);
	double f[MAXD], e[MAXD];
	for (int i = 0; i <= m + 1; i++) {
		f[i] = p[i - d] + p[i + d] + p[i - dd] + p[i + dd];
		e[i] = p[i - d - dd] + p[i + d - dd] + p[i - d + dd] +
		       p[i + d + dd];
	}
	for (int i = 1; i <= m; i++) {
		double faces = p[i - 1] + p[i + 1] + f[i];
		double edges = e[i] + f[i - 1] + f[i + 1];
		double corners = e[i - 1] + e[i + 1];
		out[i] = w[0] * p[i] + w[1] * faces + w[2] * edges +
			 w[3] * corners;
	}
}

/* dst = base + sign * (w-stencil of src); dst may be base. */
static void stencil_apply(const double *src, const double w[4],
			  const double *base, double sign, double *dst, int m)
{
#pragma omp parallel for schedule(static) if (m >= 16)
	for (int i3 = 1; i3 <= m; i3++) {
		double t[MAXD];
		for (int i2 = 1; i2 <= m; i2++) {
			long b = ix(m, i3, i2, 0);
			stencil_row(src, m, i3, i2, w, t);
			for (int i1 = 1; i1 <= m; i1++)
				dst[b + i1] = base[b + i1] + sign * t[i1];
		}
	}
	comm3(dst, m);
}

/* res = rhs - A x (res may be rhs). */
static void resid(const double *x, const double *rhs, double *res, int m)
{
	stencil_apply(x, A_op, rhs, -1.0, res, m);
}

/* The class's smoother weights (set in main). */
static const double *S_op;

/* x += S res: the smoother. */
static void psinv(const double *res, double *x, int m)
{
	stencil_apply(res, S_op, x, 1.0, x, m);
}

/* Coarse point j sits on fine point 2j (ghosted indices): s = P fine. */
static void rprj3(const double *fine, int mf, double *s, int mc)
{
#pragma omp parallel for schedule(static) if (mc >= 16)
	for (int j3 = 1; j3 <= mc; j3++) {
		double t[MAXD];
		for (int j2 = 1; j2 <= mc; j2++) {
			stencil_row(fine, mf, 2 * j3, 2 * j2, P_op, t);
			long b = ix(mc, j3, j2, 0);
			for (int j1 = 1; j1 <= mc; j1++)
				s[b + j1] = t[2 * j1];
		}
	}
	comm3(s, mc);
}

/* fine += Q coarse: trilinear interpolation; along each axis fine point 2j
 * coincides with coarse j and fine 2j+1 is the mean of coarse j and j+1. */
static void interp(const double *z, int mc, double *fine, int mf)
{
#pragma omp parallel for schedule(static) if (mf >= 16)
	for (int i3 = 1; i3 <= mf; i3++) {
		double zz[MAXD];
		int a3 = i3 / 2, b3 = (i3 + 1) / 2;
		for (int i2 = 1; i2 <= mf; i2++) {
			int a2 = i2 / 2, b2 = (i2 + 1) / 2;
			const double *z00 = z + ix(mc, a3, a2, 0);
			const double *z01 = z + ix(mc, a3, b2, 0);
			const double *z10 = z + ix(mc, b3, a2, 0);
			const double *z11 = z + ix(mc, b3, b2, 0);
			/* weights (1 or 1/2 per axis) folded into one row */
			double w = (a3 == b3 ? 1.0 : 0.5) * (a2 == b2 ? 1.0 : 0.5);
			for (int j = 0; j <= mc + 1; j++) {
				double s = z00[j];
				if (a2 != b2)
					s += z01[j];
				if (a3 != b3) {
					s += z10[j];
					if (a2 != b2)
						s += z11[j];
				}
				zz[j] = w * s;
			}
			double *row = fine + ix(mf, i3, i2, 0);
			for (int i1 = 1; i1 <= mf; i1++)
				row[i1] += i1 % 2 ? 0.5 * (zz[i1 / 2] +
							   zz[i1 / 2 + 1])
						  : zz[i1 / 2];
		}
	}
	comm3(fine, mf);
}

static void zero(double *a, int m)
{
	long n = cells(m);
#pragma omp parallel for schedule(static) if (m >= 16)
	for (long i = 0; i < n; i++)
		a[i] = 0.0;
}

static double norm2(const double *a, int m, double *maxabs)
{
	double s = 0.0, mx = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : s) \
	reduction(max : mx) if (m >= 16)
	for (int i3 = 1; i3 <= m; i3++)
		for (int i2 = 1; i2 <= m; i2++) {
			const double *row = a + ix(m, i3, i2, 0);
			for (int i1 = 1; i1 <= m; i1++) {
				s += row[i1] * row[i1];
				mx = fmax(mx, fabs(row[i1]));
			}
		}
	*maxabs = mx;
	return sqrt(s / ((double)m * m * m));
}

/* Keeps the 10 largest values seen, ascending, with their positions. */
struct top10 {
	double val[10];
	long pos[10];
};

static void top10_offer(struct top10 *t, double x, long pos)
{
	if (x <= t->val[0])
		return;
	int i = 0;
	while (i < 9 && t->val[i + 1] < x) {
		t->val[i] = t->val[i + 1];
		t->pos[i] = t->pos[i + 1];
		i++;
	}
	t->val[i] = x;
	t->pos[i] = pos;
}

/* The right-hand side: the generator walks the grid with i1 fastest. */
static void make_rhs(int m)
{
#pragma omp parallel for schedule(static)
	for (int i3 = 1; i3 <= m; i3++) {
		uint64_t s = lcg_skip(314159265ULL, NAS_A,
				      (uint64_t)(i3 - 1) * m * m);
		for (int i2 = 1; i2 <= m; i2++)
			vranlc(m, &s, NAS_A, v + ix(m, i3, i2, 1));
	}
	struct top10 hi, lo; /* lo holds negated values */
	for (int i = 0; i < 10; i++) {
		hi.val[i] = lo.val[i] = -2.0;
		hi.pos[i] = lo.pos[i] = -1;
	}
	for (int i3 = 1; i3 <= m; i3++)
		for (int i2 = 1; i2 <= m; i2++)
			for (int i1 = 1; i1 <= m; i1++) {
				long p = ix(m, i3, i2, i1);
				top10_offer(&hi, v[p], p);
				top10_offer(&lo, -v[p], p);
			}
	zero(v, m);
	for (int i = 0; i < 10; i++) {
		v[hi.pos[i]] = 1.0;
		v[lo.pos[i]] = -1.0;
	}
	comm3(v, m);
}

/* One V-cycle on levels lt..1, updating u[lt] and r[lt]. */
static void vcycle(int lt)
{
	for (int k = lt; k > 1; k--)
		rprj3(r[k], 1 << k, r[k - 1], 1 << (k - 1));
	zero(u[1], 2);
	psinv(r[1], u[1], 2);
	for (int k = 2; k < lt; k++) {
		int m = 1 << k;
		zero(u[k], m);
		interp(u[k - 1], m / 2, u[k], m);
		resid(u[k], r[k], r[k], m);
		psinv(r[k], u[k], m);
	}
	int n = 1 << lt;
	interp(u[lt - 1], n / 2, u[lt], n);
	resid(u[lt], v, r[lt], n);
	psinv(r[lt], u[lt], n);
}

int main(int argc, char **argv)
{
	int reps;
	char cls = parse_args(argc, argv, &reps);
	const struct mg_class *c = &classes[class_index(cls)];
	S_op = c->smoother;
	int lt = c->level, n = 1 << lt;
	double t[1000];
	int ok_all = 1;

	printf("# MG class %c: %d^3 grid, %d levels, %d iterations, %d "
	       "threads\n",
	       cls, n, lt, c->nit, omp_get_max_threads());
	for (int k = 1; k <= lt; k++) {
		u[k] = xmalloc((size_t)cells(1 << k) * sizeof(double));
		r[k] = xmalloc((size_t)cells(1 << k) * sizeof(double));
		zero(u[k], 1 << k); /* first touch outside the timed runs */
		zero(r[k], 1 << k);
	}
	v = xmalloc((size_t)cells(n) * sizeof(double));
	make_rhs(n);

	for (int rep = 0; rep < reps; rep++) {
		double rmax;
		zero(u[lt], n);
		double t0 = wtime();
		resid(u[lt], v, r[lt], n);
		norm2(r[lt], n, &rmax);
		for (int it = 0; it < c->nit; it++) {
			vcycle(lt);
			resid(u[lt], v, r[lt], n);
		}
		double rnm2 = norm2(r[lt], n, &rmax);
		t[rep] = wtime() - t0;
		ok_all &= check_value(rep + 1, t[rep], "l2norm", rnm2, c->norm,
				      EPS);
		printf("#   max |residual| = %.6e\n", rmax);
	}
	return print_result("mg", cls, t, reps, ok_all);
}
