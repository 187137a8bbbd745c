/* An OpenMP program (everything it calls itself the kernel's runtime provides) that loads a
 * library using OpenACC (omp_acc_lib.c). Under `hrt run --omp auto` it must keep its own
 * libgomp: the library's call would otherwise reach libgomp's code beside the kernel's runtime. */
#include <omp.h>
#include <stdio.h>

int acc_sum(int n);

int main(void)
{
	int threads = 0;
#pragma omp parallel reduction(+ : threads)
	threads += 1;
	printf("openmp: %s\n", threads == omp_get_max_threads() ? "every thread counted" : "a thread missing");
	printf("openacc: %d\n", acc_sum(100));
	return 0;
}
