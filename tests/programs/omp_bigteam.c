/* A team of more threads than the program's memory holds stacks for under hrt (10,000: a
 * worker's stack is resident memory there, where Linux only reserves it). The specification
 * lets a region get fewer threads than num_threads asks for; checked: a team of 1 to 10,000
 * threads, every one runs its implicit task once, the team's barrier and a reduction work,
 * and the program's memory is still there afterwards. Prints the same lines natively. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
    const int asked = 10000;
    int size = 0, ran = 0, after_barrier = 0, bad = 0;
    long sum = 0;
#pragma omp parallel num_threads(asked) reduction(+ : sum)
    {
#pragma omp single
        size = omp_get_num_threads();
#pragma omp atomic
        ran++;
#pragma omp barrier
        if (ran != size)
#pragma omp atomic
            bad++;
#pragma omp atomic
        after_barrier++;
        sum += omp_get_thread_num() + 1;
    }
    int team_ok = size >= 1 && size <= asked;
    printf("team of 1 to %d threads: %s\n", asked, team_ok ? "yes" : "no");
    printf("each ran once, all before the barrier: %s\n", ran == size && after_barrier == size && !bad ? "yes" : "no");
    printf("reduction of the thread numbers: %s\n", sum == (long)size * (size + 1) / 2 ? "yes" : "no");
    size_t len = 64 << 20;
    char *p = malloc(len);
    int mem_ok = p != NULL;
    if (p) {
        memset(p, 1, len);
        mem_ok = p[0] == 1 && p[len - 1] == 1;
    }
    printf("64 MiB allocated and written afterwards: %s\n", mem_ok ? "yes" : "no");
    /* A second region asking as much again gets a team as well. */
    int again = 0;
#pragma omp parallel num_threads(asked)
    {
#pragma omp single
        again = omp_get_num_threads();
    }
    printf("a second such region: %s\n", again >= 1 && again <= asked ? "yes" : "no");
    if (team_ok && ran == size && !bad && mem_ok)
        printf("all checks passed\n");
    return 0;
}
