// An affinity format the runtime cannot expand (argv[1]): libgomp ends the program with status
// 1 and a message naming what it could not read; the kernel's runtime must end it the same way,
// byte for byte on stderr.
#include <omp.h>
#include <stdio.h>

int main(int argc, char **argv) {
    char buf[128];
    omp_set_affinity_format(argc > 1 ? argv[1] : "%n");
    size_t n = omp_capture_affinity(buf, sizeof buf, NULL);
    printf("captured %zu bytes\n", n);
    return 0;
}
