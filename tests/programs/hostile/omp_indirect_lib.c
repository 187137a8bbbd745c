/* A library built with -fopenmp that a program built without it calls (ImageMagick's
 * libMagickCore under `convert`, OpenBLAS's OpenMP build under numpy): the library, not the
 * program, loads libgomp. See omp_indirect_main.c. */
#include <omp.h>

/* The sum of i * i for i below n, by a team, with its size and a dynamic loop's coverage. */
long long team_sum(int n, int *team, int *covered) {
    long long sum = 0;
    int size = 0, count = 0;
#pragma omp parallel reduction(+ : sum, count)
    {
#pragma omp single
        size = omp_get_num_threads();
#pragma omp for schedule(dynamic, 3)
        for (int i = 0; i < n; i++) {
            sum += (long long)i * i;
            count++;
        }
    }
    *team = size;
    *covered = count;
    return sum;
}
