/* HRT demo: an ordinary OpenMP program (stock gcc + libgomp, static) that `hrt run` turns
 * into the kernel's application. It integrates 4/(1+x^2) over [0,1] to compute pi. */
#include <omp.h>
#include <stdio.h>

int main(void) {
    const long steps = 200000000;
    const double h = 1.0 / steps;
    double sum = 0.0;
    double t0 = omp_get_wtime();
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (long i = 0; i < steps; i++) {
        double x = (i + 0.5) * h;
        sum += 4.0 / (1.0 + x * x);
    }
    double t1 = omp_get_wtime();
    printf("pi = %.12f with %d OpenMP threads on %d CPUs (%.3f s)\n", sum * h, omp_get_max_threads(),
           omp_get_num_procs(), t1 - t0);
    return 0;
}
