/* An OpenMP program whose work is mostly serial: it sleeps (so that idle vCPUs halt), writes
 * ARG lines of numbers (4 KiB writes, each a forwarded call), then sums in a parallel loop and
 * sleeps again before its last line. Under hrt a program with an OpenMP runtime has every vCPU
 * started at boot; those without work halt, and the channel must count them halted (its
 * pollers spin on the host CPUs they leave free instead of sleeping between the writes). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int lines = argc > 1 ? atoi(argv[1]) : 200;
    usleep(50000);
    for (int i = 0; i < lines; i++) {
        for (int j = 0; j < 100; j++)
            printf("%d ", (i * 7 + j * 13) % 100);
        printf("\n");
    }
    long sum = 0;
#pragma omp parallel for reduction(+ : sum)
    for (int i = 0; i < lines * 100; i++)
        sum += i % 7;
    fflush(stdout);
    usleep(50000);
    printf("sum %ld\n", sum);
    return 0;
}
