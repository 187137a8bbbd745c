/* MPI collectives on every rank: allreduce (sum, max, of ints and doubles), bcast, gather,
 * allgather, alltoall, scan, barrier and a split communicator. Each rank prints its own line
 * of results; output is sorted by rank (rank order through a token passed around). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static void print_in_order(int rank, int nranks, const char *line) {
    for (int r = 0; r < nranks; r++) {
        if (r == rank) {
            fputs(line, stdout);
            fflush(stdout);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    char line[512];

    long sum, mine = (rank + 1) * 1000003L, max;
    MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &max, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    enum { N = 10000 };
    double *v = malloc(N * sizeof *v), *r = malloc(N * sizeof *r);
    for (int i = 0; i < N; i++) v[i] = (rank + 1) * 0.5 + i;
    MPI_Allreduce(v, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double dsum = 0;
    for (int i = 0; i < N; i++) dsum += r[i];

    int root_value = rank == 0 ? 424242 : -1;
    MPI_Bcast(&root_value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int *gathered = malloc(n * sizeof(int));
    int sq = rank * rank + 7;
    MPI_Gather(&sq, 1, MPI_INT, gathered, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int *all = malloc(n * sizeof(int));
    MPI_Allgather(&sq, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    int *to = malloc(n * sizeof(int)), *from = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) to[i] = rank * 100 + i;
    MPI_Alltoall(to, 1, MPI_INT, from, 1, MPI_INT, MPI_COMM_WORLD);
    int prefix;
    MPI_Scan(&sq, &prefix, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    int hrank, hsize;
    MPI_Comm_rank(half, &hrank);
    MPI_Comm_size(half, &hsize);

    int len = snprintf(line, sizeof line, "rank %d/%d: sum %ld max %ld dsum %.1f bcast %d prefix %d split %d/%d all", rank, n,
                       sum, max, dsum, root_value, prefix, hrank, hsize);
    for (int i = 0; i < n; i++) len += snprintf(line + len, sizeof line - len, " %d", all[i]);
    len += snprintf(line + len, sizeof line - len, " a2a");
    for (int i = 0; i < n; i++) len += snprintf(line + len, sizeof line - len, " %d", from[i]);
    if (rank == 0) {
        len += snprintf(line + len, sizeof line - len, " gathered");
        for (int i = 0; i < n; i++) len += snprintf(line + len, sizeof line - len, " %d", gathered[i]);
    }
    snprintf(line + len, sizeof line - len, "\n");
    print_in_order(rank, n, line);
    MPI_Comm_free(&half);
    MPI_Finalize();
    return 0;
}
