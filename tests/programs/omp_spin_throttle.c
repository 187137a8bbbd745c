/* A team that waits at many barriers, and where its threads ran: with more vCPUs than host
 * CPUs, `hrt run` makes the program's libgomp throttle its spins as on the host and puts the
 * team on as many vCPUs as the host has CPUs (monitor/tests/omp_spin_throttle.rs). Prints
 * what it prints natively on its first line; the second line (CPUs) differs by design. */
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>

int main(void) {
    enum { ROUNDS = 2000, MAX = 256 };
    static int seen[MAX];
    long sum = 0;
    int team = 0;
#pragma omp parallel reduction(+ : sum)
    {
#pragma omp single
        team = omp_get_num_threads();
        for (int i = 0; i < ROUNDS; i++) {
            sum += i % 7;
#pragma omp barrier
        }
        int cpu = sched_getcpu();
        if (cpu >= 0 && cpu < MAX) {
#pragma omp atomic write
            seen[cpu] = 1;
        }
    }
    int used = 0;
    for (int c = 0; c < MAX; c++)
        used += seen[c];
    long want = 0;
    for (int i = 0; i < ROUNDS; i++)
        want += i % 7;
    printf("%s: %d threads, sum %ld\n", sum == want * team ? "all checks passed" : "WRONG", team, sum);
    printf("procs %d, cpus used %d\n", omp_get_num_procs(), used);
    return sum != want * team;
}
