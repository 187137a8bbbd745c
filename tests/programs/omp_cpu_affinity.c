// GOMP_CPU_AFFINITY, libgomp's own binding variable: one place per CPU it lists, in its order,
// and binding on unless OMP_PROC_BIND is false; OMP_PLACES, when valid, wins. Prints the bind
// policy, the place list and each thread's place in a team of two. Run with GOMP_CPU_AFFINITY
// (and OMP_PLACES or OMP_PROC_BIND) set; under `hrt run --omp kernel` the program must print
// what it prints natively (where the host has at least two CPUs).
#include <omp.h>
#include <stdio.h>

int main(void) {
    printf("proc_bind %d, places %d:", (int)omp_get_proc_bind(), omp_get_num_places());
    for (int p = 0; p < omp_get_num_places(); p++) {
        int ids[64], n = omp_get_place_num_procs(p);
        omp_get_place_proc_ids(p, ids);
        printf(" {");
        for (int i = 0; i < n && i < 64; i++) printf(i ? ",%d" : "%d", ids[i]);
        printf("}");
    }
    printf("\n");
    int place[2] = {-2, -2};
#pragma omp parallel num_threads(2)
    place[omp_get_thread_num()] = omp_get_place_num();
    printf("thread places: %d %d\n", place[0], place[1]);
    return 0;
}
