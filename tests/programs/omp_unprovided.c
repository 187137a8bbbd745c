/* An OpenACC runtime routine (acc_get_num_devices, libgomp's OpenACC part): part of libgomp
 * the kernel's own OpenMP runtime does not provide, so `hrt run --omp kernel` must refuse the
 * program and `--omp auto` must run it on its own libgomp, with the same output as natively.
 * The routine is called only with an argument. */
#include <omp.h>
#include <stdio.h>

/* openacc.h's acc_device_host. */
extern int acc_get_num_devices(int device_type);

int main(int argc, char **argv) {
    (void)argv;
    long sum = 0;
#pragma omp parallel for reduction(+ : sum)
    for (int i = 0; i < 1000; i++)
        sum += (long)i * i % 97;
    if (argc > 1)
        printf("host devices %d\n", acc_get_num_devices(2));
    printf("parallel sum %ld\n", sum);
    return 0;
}
