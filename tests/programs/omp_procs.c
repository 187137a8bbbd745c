/* What an OpenMP runtime counts as its CPUs, and whether a thread can still be bound to the
 * last CPU the system has. Prints, one per line:
 *   - omp_get_num_procs(), omp_get_max_threads() and the team size of a parallel region (with
 *     OMP_NUM_THREADS unset, the runtime's default team is one thread per CPU of its mask);
 *   - the count of the calling thread's sched_getaffinity mask and sysconf(_SC_NPROCESSORS_ONLN);
 *   - whether, bound with sched_setaffinity to the last online CPU, the thread runs there, and
 *     whether its mask then names that CPU alone.
 * Under `hrt run --cpus N` with LLVM's libomp packed on fewer vCPUs (flags::PACK_THREADS), the
 * first three and the mask count are the packed vCPUs and sysconf is N. */
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
    int team = 0;
#pragma omp parallel
    {
#pragma omp single
        team = omp_get_num_threads();
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        perror("sched_getaffinity");
        return 1;
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    printf("omp_get_num_procs: %d\n", omp_get_num_procs());
    printf("omp_get_max_threads: %d\n", omp_get_max_threads());
    printf("team: %d\n", team);
    printf("sched_getaffinity: %d\n", CPU_COUNT(&set));
    printf("online: %ld\n", online);

    cpu_set_t last;
    CPU_ZERO(&last);
    CPU_SET(online - 1, &last);
    if (sched_setaffinity(0, sizeof last, &last) != 0) {
        perror("sched_setaffinity");
        return 1;
    }
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    int only_last = CPU_COUNT(&set) == 1 && CPU_ISSET(online - 1, &set);
    printf("bound to the last CPU: runs there %s, mask names it alone %s\n",
           sched_getcpu() == online - 1 ? "yes" : "no", only_last ? "yes" : "no");
    return 0;
}
