/* omp_get_wtime reads CLOCK_MONOTONIC, as libgomp's does, in every thread: a program that keeps
 * its times (IQ-TREE's checkpoints) or compares them with another process's sees the same
 * clock. The kernel's runtime counted from the VM's boot (omp_get_wtime - CLOCK_MONOTONIC was
 * -46885 s here). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <time.h>

static double monotonic(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    int far = 0, backwards = 0;
#pragma omp parallel reduction(+ : far, backwards)
    {
        double before = monotonic();
        double w = omp_get_wtime();
        double after = monotonic();
        far += w < before - 0.05 || w > after + 0.05;
        double again = omp_get_wtime();
        backwards += again < w;
    }
    printf("omp_get_wtime is CLOCK_MONOTONIC in every thread: %s\n", far == 0 ? "yes" : "no");
    printf("omp_get_wtime never goes back: %s\n", backwards == 0 ? "yes" : "no");
    double tick = omp_get_wtick();
    printf("omp_get_wtick is a small positive number: %s\n", tick > 0 && tick < 1e-3 ? "yes" : "no");
    return 0;
}
