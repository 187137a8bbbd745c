/* MPI ping-pong between ranks 0 and 1: messages of 1 byte to 1 MiB, each payload filled with a
 * pattern that depends on its size and round and checked on arrival (both directions). Prints
 * one line per size with a checksum of what rank 0 received, so native and hrt runs compare
 * byte for byte. With argument "time", also prints latency/bandwidth lines (not compared). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern(int size, int round, int i) { return (unsigned char)(size * 7 + round * 13 + i * 31); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, nranks;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks != 2) {
        if (rank == 0) fprintf(stderr, "mpi_pingpong: needs 2 ranks, got %d\n", nranks);
        MPI_Finalize();
        return 2;
    }
    int timing = argc > 1 && strcmp(argv[1], "time") == 0;
    const int max = 1 << 20;
    unsigned char *buf = malloc(max);
    int peer = 1 - rank, bad = 0;
    for (int size = 1; size <= max; size *= 4) {
        int rounds = timing ? (size < 65536 ? 1000 : 100) : 5;
        unsigned long sum = 0;
        double t0 = MPI_Wtime();
        for (int r = 0; r < rounds; r++) {
            if (rank == 0) {
                for (int i = 0; i < size; i++) buf[i] = pattern(size, r, i);
                MPI_Send(buf, size, MPI_BYTE, peer, r, MPI_COMM_WORLD);
                MPI_Status st;
                MPI_Recv(buf, size, MPI_BYTE, peer, r, MPI_COMM_WORLD, &st);
                int got;
                MPI_Get_count(&st, MPI_BYTE, &got);
                if (got != size || st.MPI_SOURCE != peer || st.MPI_TAG != r) bad++;
                for (int i = 0; i < size; i++) {
                    if (buf[i] != (unsigned char)(pattern(size, r, i) + 1)) bad++;
                    sum += buf[i];
                }
            } else {
                MPI_Recv(buf, size, MPI_BYTE, peer, r, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (int i = 0; i < size; i++) {
                    if (buf[i] != pattern(size, r, i)) bad++;
                    buf[i]++;
                }
                MPI_Send(buf, size, MPI_BYTE, peer, r, MPI_COMM_WORLD);
            }
        }
        double t = MPI_Wtime() - t0;
        if (rank == 0) {
            printf("size %7d: %d rounds, checksum %lu\n", size, rounds, sum);
            if (timing)
                fprintf(stderr, "TIME size %7d: latency %.2f us, bandwidth %.1f MB/s\n", size,
                        t / rounds / 2 * 1e6, 2.0 * size * rounds / t / 1e6);
        }
    }
    int all_bad = 0;
    MPI_Reduce(&bad, &all_bad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("mismatches: %d\n", all_bad);
    free(buf);
    MPI_Finalize();
    return all_bad != 0;
}
