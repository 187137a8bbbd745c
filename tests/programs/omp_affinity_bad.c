// An affinity format the runtime cannot expand (argv[1]): libgomp ends the program with status
// 1 and a message naming what it could not read; the kernel's runtime must end it the same way,
// byte for byte on stderr, through the program's `exit`, which flushes what it printed before
// (a pipe's or file's stdout buffer).
#include <omp.h>
#include <stdio.h>

int main(int argc, char **argv) {
    char buf[128];
    const char *format = argc > 1 ? argv[1] : "%n";
    printf("format %s\n", format);
    omp_set_affinity_format(format);
    size_t n = omp_capture_affinity(buf, sizeof buf, NULL);
    printf("captured %zu bytes\n", n);
    return 0;
}
