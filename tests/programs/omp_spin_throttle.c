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
    static int seen[MAX], seen_any[MAX];
    long sum = 0;
    int team = 0;
#pragma omp parallel reduction(+ : sum)
    {
#pragma omp single
        team = omp_get_num_threads();
        for (int i = 0; i < ROUNDS; i++) {
            sum += i % 7;
#pragma omp barrier
            /* Where the threads ran over the rounds: at one instant two unbound threads can
             * share a vCPU (a thread that gave up spinning woke next to another). */
            int c = sched_getcpu();
            if (c >= 0 && c < MAX) {
#pragma omp atomic write
                seen_any[c] = 1;
            }
        }
        int cpu = sched_getcpu();
        if (cpu >= 0 && cpu < MAX) {
#pragma omp atomic write
            seen[cpu] = 1;
        }
    }
    int used = 0, used_any = 0;
    for (int c = 0; c < MAX; c++) {
        used += seen[c];
        used_any += seen_any[c];
    }
    long want = 0;
    for (int i = 0; i < ROUNDS; i++)
        want += i % 7;
    printf("%s: %d threads, sum %ld\n", sum == want * team ? "all checks passed" : "WRONG", team, sum);
    printf("procs %d, cpus used %d, over the rounds %d\n", omp_get_num_procs(), used, used_any);
    return sum != want * team;
}
