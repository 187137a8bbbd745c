/* A shared library that uses OpenACC: gcc -fopenacc lowers the loop to a call of libgomp's
 * GOACC_parallel_keyed (run on the host without an offload device), a function the kernel's
 * OpenMP runtime does not provide. Loaded by omp_acc_main.c. */
int acc_sum(int n)
{
	int s = 0;
#pragma acc parallel loop reduction(+ : s)
	for (int i = 1; i <= n; i++)
		s += i;
	return s;
}
