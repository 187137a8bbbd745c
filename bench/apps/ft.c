/* FT: 3-D FFT kernel of the NAS Parallel Benchmarks.
 * Solves a diffusion equation u_t = alpha * laplacian(u) spectrally: the
 * initial field (NAS random numbers) is transformed once forward; then each
 * of the class's time steps multiplies the spectrum by exp(-4 alpha pi^2 |k|^2)
 * once more, transforms it back, and takes a checksum of 1024 fixed elements,
 * which is compared with the published value for that step.
 * The FFTs are radix-2, in place, one dimension at a time: x rows are
 * contiguous, y and z columns are gathered in blocks of BLOCK rows so that
 * every load and store of the big array moves whole cache lines. The forward
 * and inverse transforms use opposite signs and neither is scaled (the
 * checksum divides by the element count); which sign is "forward" does not
 * change the result, since the multiplier is even in every k. */
#include "common.h"

#define ALPHA 1.0e-6
#define BLOCK 16 /* columns gathered together for the y and z passes */
#define EPS 1e-12

typedef struct {
	double re, im;
} cplx;

struct ft_class {
	int nx, ny, nz, niter;
	double ref[20][2]; /* checksum after each step (real, imaginary) */
};

static const struct ft_class classes[] = {
	{64, 64, 64, 6,
	 {{5.546087004964e+02, 4.845363331978e+02},
	  {5.546385409189e+02, 4.865304269511e+02},
	  {5.546148406171e+02, 4.883910722336e+02},
	  {5.545423607415e+02, 4.901273169046e+02},
	  {5.544255039624e+02, 4.917475857993e+02},
	  {5.542683411902e+02, 4.932597244941e+02}}},
	{128, 128, 32, 6,
	 {{5.673612178944e+02, 5.293246849175e+02},
	  {5.631436885271e+02, 5.282149986629e+02},
	  {5.594024089970e+02, 5.270996558037e+02},
	  {5.560698047020e+02, 5.260027904925e+02},
	  {5.530898991250e+02, 5.249400845633e+02},
	  {5.504159734538e+02, 5.239212247086e+02}}},
	{256, 256, 128, 6,
	 {{5.046735008193e+02, 5.114047905510e+02},
	  {5.059412319734e+02, 5.098809666433e+02},
	  {5.069376896287e+02, 5.098144042213e+02},
	  {5.077892868474e+02, 5.101336130759e+02},
	  {5.085233095391e+02, 5.104914655194e+02},
	  {5.091487099959e+02, 5.107917842803e+02}}},
	{512, 256, 256, 20,
	 {{5.177643571579e+02, 5.077803458597e+02},
	  {5.154521291263e+02, 5.088249431599e+02},
	  {5.146409228649e+02, 5.096208912659e+02},
	  {5.142378756213e+02, 5.101023387619e+02},
	  {5.139626667737e+02, 5.103976610617e+02},
	  {5.137423460082e+02, 5.105948019802e+02},
	  {5.135547056878e+02, 5.107404165783e+02},
	  {5.133910925466e+02, 5.108576573661e+02},
	  {5.132470705390e+02, 5.109577278523e+02},
	  {5.131197729984e+02, 5.110460304483e+02},
	  {5.130070319283e+02, 5.111252433800e+02},
	  {5.129070537032e+02, 5.111968077718e+02},
	  {5.128182883502e+02, 5.112616233064e+02},
	  {5.127393733383e+02, 5.113203605551e+02},
	  {5.126691062020e+02, 5.113735928093e+02},
	  {5.126064276004e+02, 5.114218460548e+02},
	  {5.125504076570e+02, 5.114656139760e+02},
	  {5.125002331720e+02, 5.115053595966e+02},
	  {5.124551951846e+02, 5.115415130407e+02},
	  {5.124146770029e+02, 5.115744692211e+02}}},
};

static int nx, ny, nz;
static long ntotal;
static cplx *u0, *u1;   /* the spectrum, and the field of the current step */
static double *twiddle; /* exp(-4 alpha pi^2 |k|^2) per element */
static cplx *roots[3];  /* per dimension: e^(2 pi i m / n), m < n/2 */

static inline long at(int i, int j, int k)
{
	return i + (long)nx * (j + (long)ny * k);
}

static cplx *make_roots(int n)
{
	cplx *w = xmalloc((size_t)(n / 2 + 1) * sizeof *w);
	for (int m = 0; m < n / 2; m++) {
		double t = 2.0 * M_PI * m / n;
		w[m].re = cos(t);
		w[m].im = sin(t);
	}
	return w;
}

/* In-place radix-2 FFT of BLOCK-interleaved vectors: element m of vector b
 * is v[m * BLOCK + b]; nb <= BLOCK vectors, length n. sign +1 or -1. */
static void fft_block(cplx *v, int n, int nb, const cplx *w, int sign)
{
	for (int i = 1, j = 0; i < n; i++) { /* bit reversal */
		int bit = n >> 1;
		for (; j & bit; bit >>= 1)
			j ^= bit;
		j |= bit;
		if (i < j)
			for (int b = 0; b < nb; b++) {
				cplx t = v[(long)i * BLOCK + b];
				v[(long)i * BLOCK + b] = v[(long)j * BLOCK + b];
				v[(long)j * BLOCK + b] = t;
			}
	}
	for (int len = 2; len <= n; len <<= 1) {
		int half = len >> 1, step = n / len;
		for (int s = 0; s < n; s += len)
			for (int m = 0; m < half; m++) {
				double wr = w[m * step].re, wi = sign * w[m * step].im;
				cplx *p = v + (long)(s + m) * BLOCK;
				cplx *q = v + (long)(s + m + half) * BLOCK;
				for (int b = 0; b < nb; b++) {
					double tr = q[b].re * wr - q[b].im * wi;
					double ti = q[b].re * wi + q[b].im * wr;
					q[b].re = p[b].re - tr;
					q[b].im = p[b].im - ti;
					p[b].re += tr;
					p[b].im += ti;
				}
			}
	}
}

/* Transforms dimension dim (0 x, 1 y, 2 z) of a in place. The vectors along
 * dim are gathered BLOCK at a time (neighbours along x, or along y for the x
 * pass) into a per-thread buffer, transformed together and put back. */
static void fft_dim(cplx *a, int dim, int sign)
{
	int len = dim == 0 ? nx : dim == 1 ? ny : nz;
	long stride = dim == 0 ? 1 : dim == 1 ? nx : (long)nx * ny;
	/* The lines along dim, in groups of BLOCK neighbours along `across`. */
	int across = dim == 0 ? ny : nx;
	long across_stride = dim == 0 ? nx : 1;
	int rest = dim == 2 ? ny : nz;
	long rest_stride = dim == 2 ? nx : (long)nx * ny;
	int groups = (across + BLOCK - 1) / BLOCK;
#pragma omp parallel
	{
		cplx *buf = xmalloc((size_t)len * BLOCK * sizeof *buf);
#pragma omp for collapse(2) schedule(static)
		for (int r = 0; r < rest; r++)
			for (int g = 0; g < groups; g++) {
				int first = g * BLOCK;
				int nb = across - first < BLOCK ? across - first : BLOCK;
				cplx *base = a + r * rest_stride + first * across_stride;
				for (int m = 0; m < len; m++)
					for (int b = 0; b < nb; b++)
						buf[(long)m * BLOCK + b] = base[m * stride + b * across_stride];
				fft_block(buf, len, nb, roots[dim], sign);
				for (int m = 0; m < len; m++)
					for (int b = 0; b < nb; b++)
						base[m * stride + b * across_stride] = buf[(long)m * BLOCK + b];
			}
		free(buf);
	}
}

static void fft3d(cplx *a, int sign)
{
	for (int d = 0; d < 3; d++)
		fft_dim(a, d, sign);
}

/* The NAS initial field: plane k starts 2*nx*ny*k numbers into the stream
 * seeded with 314159265; each element takes two (real, imaginary). */
static void initial_conditions(cplx *a)
{
#pragma omp parallel for schedule(static)
	for (int k = 0; k < nz; k++) {
		uint64_t s = lcg_skip(314159265ULL, NAS_A, 2 * (uint64_t)nx * ny * k);
		vranlc(2L * nx * ny, &s, NAS_A, (double *)(a + at(0, 0, k)));
	}
}

/* Wave number of index i of n: i for i < n/2, i - n otherwise. */
static inline int wave(int i, int n)
{
	return (i + n / 2) % n - n / 2;
}

static void compute_twiddle(void)
{
	double ap = -4.0 * ALPHA * M_PI * M_PI;
#pragma omp parallel for schedule(static)
	for (int k = 0; k < nz; k++)
		for (int j = 0; j < ny; j++) {
			int kk = wave(k, nz), jj = wave(j, ny);
			for (int i = 0; i < nx; i++) {
				int ii = wave(i, nx);
				twiddle[at(i, j, k)] = exp(ap * (double)(ii * ii + jj * jj + kk * kk));
			}
		}
}

/* u0 *= twiddle (one more time step); u1 = u0. */
static void evolve(void)
{
#pragma omp parallel for schedule(static)
	for (long e = 0; e < ntotal; e++) {
		u0[e].re *= twiddle[e];
		u0[e].im *= twiddle[e];
		u1[e] = u0[e];
	}
}

static cplx checksum(const cplx *a)
{
	cplx c = {0.0, 0.0};
	for (int j = 1; j <= 1024; j++) {
		cplx v = a[at(j % nx, (3 * j) % ny, (5 * j) % nz)];
		c.re += v.re;
		c.im += v.im;
	}
	c.re /= (double)ntotal;
	c.im /= (double)ntotal;
	return c;
}

/* One whole problem; returns 1 if every step's checksum is the published one
 * (printed when `report`). */
static int solve(const struct ft_class *c, int run, double *secs, int report)
{
	double t0 = wtime();
	compute_twiddle();
	initial_conditions(u1);
	fft3d(u1, 1);
	memcpy(u0, u1, (size_t)ntotal * sizeof *u0);
	int ok = 1;
	double worst = 0.0;
	for (int step = 0; step < c->niter; step++) {
		evolve();
		fft3d(u1, -1);
		cplx s = checksum(u1);
		double er = fabs((s.re - c->ref[step][0]) / c->ref[step][0]);
		double ei = fabs((s.im - c->ref[step][1]) / c->ref[step][1]);
		double e = er > ei ? er : ei;
		worst = e > worst ? e : worst;
		ok &= e <= EPS;
	}
	*secs = wtime() - t0;
	if (report)
		printf("# run %d: %.3f s  %d steps, largest checksum rel err %.1e "
		       "-> %s\n",
		       run, *secs, c->niter, worst, ok ? "ok" : "FAILED");
	return ok;
}

int main(int argc, char **argv)
{
	int reps;
	double t[1000], warm;
	int ok_all = 1;
	char cls = parse_args(argc, argv, &reps);
	const struct ft_class *c = &classes[class_index(cls)];
	nx = c->nx;
	ny = c->ny;
	nz = c->nz;
	ntotal = (long)nx * ny * nz;
	printf("# FT class %c: %dx%dx%d, %d steps, %d threads\n", cls, nx, ny,
	       nz, c->niter, omp_get_max_threads());
	u0 = xmalloc((size_t)ntotal * sizeof *u0);
	u1 = xmalloc((size_t)ntotal * sizeof *u1);
	twiddle = xmalloc((size_t)ntotal * sizeof *twiddle);
	roots[0] = make_roots(nx);
	roots[1] = make_roots(ny);
	roots[2] = make_roots(nz);
	solve(c, 0, &warm, 0); /* untimed: touches all data, as in NAS */
	for (int r = 0; r < reps; r++)
		ok_all &= solve(c, r + 1, &t[r], 1);
	return print_result("ft", cls, t, reps, ok_all);
}
