/* A serial program with its own stand-ins for the OpenMP API (the `#ifndef _OPENMP` pattern of
 * codes that build with and without OpenMP): no libgomp is linked, and `--omp kernel` must
 * leave these functions alone, whatever OMP_NUM_THREADS says. */
#include <stdio.h>
#include <time.h>

__attribute__((noinline)) int omp_get_thread_num(void) { return 0; }
__attribute__((noinline)) int omp_get_num_threads(void) { return 1; }
__attribute__((noinline)) int omp_get_max_threads(void) { return 1; }
__attribute__((noinline)) int omp_get_num_procs(void) { return 1; }
__attribute__((noinline)) int omp_in_parallel(void) { return 0; }
__attribute__((noinline)) double omp_get_wtime(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(void) {
    double t0 = omp_get_wtime();
    printf("thread %d of %d, max %d, procs %d, in parallel %d, time goes on %d\n", omp_get_thread_num(),
           omp_get_num_threads(), omp_get_max_threads(), omp_get_num_procs(), omp_in_parallel(),
           omp_get_wtime() >= t0);
    return 0;
}
