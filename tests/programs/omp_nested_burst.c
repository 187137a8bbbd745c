/* A burst of deep nesting, then ordinary nested regions. Under hrt's kernel runtime a worker's
 * stack is resident memory, so past a point a team gets fewer threads than asked (the
 * specification allows it): the burst may run fewer than its 240 threads. The later regions
 * must still get their 6: the workers the burst made sit idle in the nested teams of idle
 * workers and are given back to whichever team needs them (they were not: a 3x2 region ran
 * 4 threads for the rest of the run at --mem 4G). */
#include <omp.h>
#include <stdio.h>

static long count(int a, int b) {
    long t = 0;
#pragma omp parallel num_threads(a) reduction(+ : t)
#pragma omp parallel num_threads(b) reduction(+ : t)
    t++;
    return t;
}

int main(void) {
    omp_set_max_active_levels(4);
    long burst = 0;
#pragma omp parallel num_threads(2) reduction(+ : burst)
#pragma omp parallel num_threads(3) reduction(+ : burst)
#pragma omp parallel num_threads(5) reduction(+ : burst)
#pragma omp parallel num_threads(8) reduction(+ : burst)
    burst++;
    printf("burst ran: %d\n", burst > 0 && burst <= 240);
    for (int i = 0; i < 3; i++)
        printf("after: 3x2 -> %ld\n", count(3, 2));
    printf("nested burst: done\n");
    return 0;
}
