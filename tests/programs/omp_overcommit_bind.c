// Many short parallel regions, each a loop with a reduction, as iterative solvers make them.
// stdout: the sums (the same for any team and placement). stderr: how many distinct CPUs the
// threads of the last region ran on, and the seconds the regions took; the test reads these
// under hrt with more vCPUs than host CPUs and OMP_PROC_BIND/OMP_PLACES set. With a second
// argument of 1 the first thread first binds itself to each of its CPUs in turn and then takes
// its whole mask back, as hwloc's topology discovery does in MPICH's MPI_Init.
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    int regions = argc > 1 ? atoi(argv[1]) : 1000;
    if (argc > 2 && atoi(argv[2]) == 1) {
        cpu_set_t all, one;
        if (sched_getaffinity(0, sizeof all, &all) != 0)
            return 1;
        for (int c = 0; c < CPU_SETSIZE; c++) {
            if (!CPU_ISSET(c, &all))
                continue;
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            if (sched_setaffinity(0, sizeof one, &one) != 0)
                return 1;
        }
        if (sched_setaffinity(0, sizeof all, &all) != 0)
            return 1;
    }
    long sum = 0;
    double t = omp_get_wtime();
    for (int r = 0; r < regions; r++) {
#pragma omp parallel for reduction(+ : sum)
        for (int i = 0; i < 1000; i++)
            sum += i % 7;
    }
    t = omp_get_wtime() - t;
    int cpu_of[256];
    int team = 0;
#pragma omp parallel
    {
#pragma omp single
        team = omp_get_num_threads();
        int me = omp_get_thread_num();
        if (me < 256)
            cpu_of[me] = sched_getcpu();
    }
    int distinct = 0;
    for (int i = 0; i < team && i < 256; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= cpu_of[j] == cpu_of[i];
        distinct += !seen;
    }
    printf("regions %d sum %ld team %d\n", regions, sum, team);
    fprintf(stderr, "cpus %d seconds %.3f\n", distinct, t);
    return 0;
}
