// Fresh break memory must read zero (glibc's calloc trusts it): grow the break by 256 MiB and
// look at every byte; then calloc many arrays and check that they sum to zero.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void) {
    size_t len = 256u << 20;
    unsigned char *p = sbrk(len);
    if (p == (void *)-1) {
        perror("sbrk");
        return 1;
    }
    size_t nonzero = 0, first = 0;
    for (size_t i = 0; i < len; i++)
        if (p[i] && nonzero++ == 0)
            first = i;
    printf("sbrk 256 MiB: %zu non-zero bytes%s\n", nonzero, nonzero ? " (first at an offset below)" : "");
    if (nonzero)
        fprintf(stderr, "first non-zero byte at offset %#zx: %#x\n", first, p[first]);
    sbrk(-(long)len);
    int bad = 0;
    for (int i = 0; i < 2000; i++) {
        double *a = calloc(8192, sizeof(double));
        double s = 0;
        for (int j = 0; j < 8192; j++)
            s += a[j];
        if (s != 0.0)
            bad++;
        if (i % 3 == 0)
            free(a);
    }
    printf("calloc 2000 x 64 KiB: %d not zero\n", bad);
    return 0;
}
