// An OpenMP program that makes no team: it only reads the clock through the OpenMP API, so a
// static link has no pthread_create. `hrt run --omp kernel` must run it (nothing of the
// runtime's needs pthread_create) and print what it prints natively.
#include <omp.h>
#include <stdio.h>

int main(void) {
    double t0 = omp_get_wtime();
    double tick = omp_get_wtick();
    volatile double x = 0;
    for (int i = 0; i < 1000000; i++)
        x += i;
    double t1 = omp_get_wtime();
    printf("_OPENMP defined: %d\n", _OPENMP > 0);
    printf("tick positive and below 1 ms: %d\n", tick > 0 && tick < 1e-3);
    printf("time moves forward: %d\n", t1 >= t0);
    printf("done\n");
    return 0;
}
