/* A trivial program for a VM with many vCPUs: says hello and reports (on stderr) how many CPUs
 * its affinity mask holds. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>

int main(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : -1;
    printf("hello from a program\n");
    fprintf(stderr, "affinity: %d CPUs\n", n);
    return 0;
}
