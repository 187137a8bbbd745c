/* MPI + OpenMP: each rank integrates its share of 4/(1+x^2) over [0,1] with an OpenMP
 * parallel-for reduction (2 threads unless OMP_NUM_THREADS says otherwise), the ranks combine
 * with MPI_Reduce; MPI_Init_thread asks for MPI_THREAD_FUNNELED. Also a per-thread sum of
 * thread numbers, to show each rank ran its team. */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    const long steps = 4000000;
    const double h = 1.0 / steps;
    double part = 0;
    int threads = 0;
#pragma omp parallel reduction(+ : part) reduction(max : threads)
    {
        threads = omp_get_num_threads();
#pragma omp for schedule(static)
        for (long i = rank; i < steps; i += n) {
            double x = (i + 0.5) * h;
            part += 4.0 / (1.0 + x * x);
        }
    }
    part *= h;
    double pi;
    MPI_Reduce(&part, &pi, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    int all_threads;
    MPI_Reduce(&threads, &all_threads, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ranks %d, threads in all %d, provided >= funneled: %d, pi %.10f\n", n, all_threads,
               provided >= MPI_THREAD_FUNNELED, pi);
    MPI_Finalize();
    return 0;
}
