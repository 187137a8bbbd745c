/* Device memory routines (omp_target_alloc/omp_target_free on the initial device): part of the
 * API the kernel's own OpenMP runtime does not provide (no offloading), so `hrt run --omp
 * kernel` must refuse the program and `--omp auto` must run it on its own libgomp, with the
 * same output as natively. */
#include <omp.h>
#include <stdio.h>

int main(void) {
    enum { N = 1000 };
    long *a = omp_target_alloc(N * sizeof *a, omp_get_initial_device());
    if (!a)
        return 1;
    long sum = 0;
#pragma omp parallel for reduction(+ : sum)
    for (int i = 0; i < N; i++) {
        a[i] = (long)i * i % 97;
        sum += a[i];
    }
    omp_target_free(a, omp_get_initial_device());
    printf("omp_target_alloc sum %ld\n", sum);
    return 0;
}
