/* The `error` directive with severity(fatal) at run time (GOMP_error, which ends the program
 * with the C library's exit): part of libgomp the kernel's own OpenMP runtime does not provide,
 * so `hrt run --omp kernel` must refuse the program and `--omp auto` must run it on its own
 * libgomp, with the same output as natively. The directive is reached only with an argument. */
#include <omp.h>
#include <stdio.h>

int main(int argc, char **argv) {
    (void)argv;
    long sum = 0;
#pragma omp parallel for reduction(+ : sum)
    for (int i = 0; i < 1000; i++)
        sum += (long)i * i % 97;
    if (argc > 1) {
#pragma omp error at(execution) severity(fatal) message("more arguments than expected")
    }
    printf("parallel sum %ld\n", sum);
    return 0;
}
