/* Prints how many CPUs the program sees through each interface that programs and runtimes use:
 * sched_getaffinity (libgomp's omp_get_num_procs), sysconf(_SC_NPROCESSORS_ONLN) and
 * sysconf(_SC_NPROCESSORS_CONF) (glibc reads /sys/devices/system/cpu/online and .../possible),
 * and get_nprocs. Under `hrt run --cpus N` every one should be N; natively they are the host's. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <sys/sysinfo.h>
#include <unistd.h>

int main(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        perror("sched_getaffinity");
        return 1;
    }
    printf("sched_getaffinity: %d\n", CPU_COUNT(&set));
    printf("sysconf(_SC_NPROCESSORS_ONLN): %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
    printf("sysconf(_SC_NPROCESSORS_CONF): %ld\n", sysconf(_SC_NPROCESSORS_CONF));
    printf("get_nprocs: %d\n", get_nprocs());
    printf("get_nprocs_conf: %d\n", get_nprocs_conf());
    return 0;
}
