/* A wavefront pipeline whose threads wait for each other in program code, as PRK's p2p kernel
 * and NPB LU do: each thread owns a block of columns and, for every row, spins on its left
 * neighbour's flag (an atomic read, no PAUSE) before it computes its part of the row. The
 * flag's index is computed each round from the team size kept in a shared record, which an
 * atomic read makes the compiler load again every round. Prints a checksum, compared with a
 * serial computation of the same grid. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define LINE 16 /* ints per flag: one cache line each */

struct shared {
    int nthread;
};

/* The grid's recurrence; row 0 and column 0 are fixed, the corner is set from the previous
 * iteration's last point. */
static double point(double left, double below, double diagonal) { return (left + below + diagonal) / 3; }

int main(void) {
    const long m = 1200, n = 300;
    const int iterations = 12;
    double *grid = calloc(m * n, sizeof(double));
    double *serial = calloc(m * n, sizeof(double));
    int maxthreads = omp_get_max_threads();
    int *flag = calloc((size_t)maxthreads * LINE * n, sizeof(int));
    struct shared team = {0};
    if (!grid || !serial || !flag)
        return 1;
#define A(g, i, j) (g)[(j) * m + (i)]
#define FLAG(t, j) flag[((t) + (j) * team.nthread) * LINE]
    for (long i = 0; i < m; i++)
        A(serial, i, 0) = A(grid, i, 0) = (double)i;
    for (long j = 0; j < n; j++)
        A(serial, 0, j) = A(grid, 0, j) = (double)j / 4;
    for (int it = 0; it < iterations; it++) {
        for (long j = 1; j < n; j++)
            for (long i = 1; i < m; i++)
                A(serial, i, j) = point(A(serial, i - 1, j), A(serial, i, j - 1), A(serial, i - 1, j - 1));
        A(serial, 0, 0) = -A(serial, m - 1, n - 1) / 1024;
    }

#pragma omp parallel
    {
#pragma omp single
        team.nthread = omp_get_num_threads();
        int tid = omp_get_thread_num(), nt = team.nthread;
        long first = 1 + (m - 1) * tid / nt, last = (m - 1) * (tid + 1) / nt; /* columns first..last */
        for (int it = 0; it < iterations; it++) {
            int want = (it + 1) & 1; /* flags toggle each iteration */
            if (tid == 0 && it > 0) {
                /* The last thread's corner: the previous iteration is over everywhere. */
                for (;;) {
                    int seen;
#pragma omp atomic read seq_cst
                    seen = FLAG(team.nthread - 1, 0);
                    if (seen == (it & 1))
                        break;
                }
            }
            for (long j = 1; j < n; j++) {
                if (tid > 0) {
                    for (;;) {
                        int seen;
#pragma omp atomic read seq_cst
                        seen = FLAG(tid - 1, j);
                        if (seen == want)
                            break;
                    }
                }
                for (long i = first; i <= last; i++)
                    A(grid, i, j) = point(A(grid, i - 1, j), A(grid, i, j - 1), A(grid, i - 1, j - 1));
                if (tid < nt - 1) {
#pragma omp atomic write seq_cst
                    FLAG(tid, j) = want;
                }
            }
            if (tid == nt - 1) {
                A(grid, 0, 0) = -A(grid, m - 1, n - 1) / 1024;
#pragma omp atomic write seq_cst
                FLAG(nt - 1, 0) = want;
            }
        }
    }

    double sum = 0;
    long wrong = 0;
    for (long k = 0; k < m * n; k++) {
        sum += grid[k];
        wrong += grid[k] != serial[k];
    }
    printf("checksum %.6e, %ld point(s) differ from the serial computation\n", sum, wrong);
    puts(wrong ? "FAILED" : "all checks passed");
    return wrong != 0;
}
