/* getcpu from every CPU: a thread pinned to each CPU in turn asks sched_getcpu() (the vDSO's
 * getcpu) and the getcpu system call, and prints both. With the kernel in ring 3 on a PVM host,
 * RDTSCP would give the *host's* CPU, so the vDSO must read the kernel's per-CPU data. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : (int)sysconf(_SC_NPROCESSORS_ONLN);
    for (int cpu = n - 1; cpu >= 0; cpu--) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            perror("sched_setaffinity");
            return 1;
        }
        unsigned sys_cpu = 999, node = 999;
        syscall(SYS_getcpu, &sys_cpu, &node, NULL);
        printf("pinned to %d: sched_getcpu %d, getcpu system call %u\n", cpu, sched_getcpu(), sys_cpu);
    }
    return 0;
}
