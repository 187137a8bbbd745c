// dyn-var (OMP_DYNAMIC=true or omp_set_dynamic(1)) lets the runtime give a region fewer
// threads than it asks for: libgomp gives at most as many as there are processors (less the
// load average), at most nthreads-var. Prints the team sizes of regions that ask for 8 and 3.
#include <omp.h>
#include <stdio.h>

static int team(int n) {
    int size = 0;
#pragma omp parallel num_threads(n)
#pragma omp single
    size = omp_get_num_threads();
    return size;
}

int main(void) {
    printf("dynamic %d, procs %d, max threads %d\n", omp_get_dynamic(), omp_get_num_procs(), omp_get_max_threads());
    int all = 0;
#pragma omp parallel
#pragma omp single
    all = omp_get_num_threads();
    printf("default team %d, asked 8: %d, asked 3: %d\n", all, team(8), team(3));
    omp_set_dynamic(0);
    printf("dynamic off: asked 8: %d\n", team(8));
    return 0;
}
