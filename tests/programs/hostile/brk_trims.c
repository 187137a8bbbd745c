/* A break that takes turns shrinking and growing (a malloc heap trimmed and grown again). HRT
 * keeps the pages of such a lowered break present once the pattern repeats (no TLB flush per
 * trim): memory the break grows over must still read zero, the pages above the break must
 * still be no mapping to the calls that take ranges and to forwarded calls, and a fixed
 * mapping may still take them, fresh. Prints one line per check; exit status 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096L

/* Grows the break by `len`, counts the non-zero bytes there, fills it, lowers it again. */
static long cycle(long len, unsigned char fill) {
    unsigned char *p = sbrk(len);
    if (p == (void *)-1)
        return -1;
    long nonzero = 0;
    for (long i = 0; i < len; i++)
        nonzero += p[i] != 0;
    memset(p, fill, len);
    sbrk(-len);
    return nonzero;
}

static const char *result(int ok) { return ok ? "ok" : strerror(errno); }

int main(void) {
    long bad = 0;
    for (int i = 0; i < 40; i++)
        bad += cycle((64 + 16 * (i % 5)) * 1024, 0xa5);
    printf("40 trims of 64-128 KiB: %ld non-zero bytes where the break grew\n", bad);

    /* Above the lowered break: no mapping to these calls (as on Linux). */
    char *top = sbrk(0);
    char *above = (char *)(((uintptr_t)top + PAGE - 1) & ~(PAGE - 1)) + 4 * PAGE;
    printf("mprotect above the break: %s\n", result(mprotect(above, PAGE, PROT_READ) == 0));
    printf("madvise above the break: %s\n", result(madvise(above, PAGE, MADV_NORMAL) == 0));
    unsigned char vec[1];
    printf("mincore above the break: %s\n", result(mincore(above, PAGE, vec) == 0));
    int fd = open("/dev/zero", O_RDONLY);
    errno = 0;
    ssize_t n = read(fd, above, 16);
    printf("read into memory above the break: %zd (%s)\n", n, n < 0 ? strerror(errno) : "read");
    int pipes[2];
    pipe(pipes);
    errno = 0;
    n = write(pipes[1], above, 16);
    printf("write from memory above the break: %zd (%s)\n", n, n < 0 ? strerror(errno) : "written");

    /* A fixed mapping may take that address space, and finds it fresh. */
    char *m = mmap(above, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    long nonzero = 0;
    if (m == above)
        for (long i = 0; i < 2 * PAGE; i++)
            nonzero += m[i] != 0;
    printf("a fixed mapping above the break: %s, %ld non-zero bytes\n", m == above ? "made" : strerror(errno), nonzero);
    if (m == above) {
        memset(m, 0x5a, 2 * PAGE);
        munmap(m, 2 * PAGE);
    }

    /* The break grows again, short of where that mapping was, and over it. */
    bad = 0;
    for (int i = 0; i < 10; i++)
        bad += cycle(2 * PAGE, 0x3c) + cycle(16 * PAGE, 0x3c);
    printf("20 more trims around it: %ld non-zero bytes where the break grew\n", bad);

    /* A part of the heap made read-only, then given back with the break: it comes back fresh,
     * readable and writable. */
    char *h = sbrk(8 * PAGE);
    memset(h, 0x77, 8 * PAGE);
    char *hp = (char *)(((uintptr_t)h + PAGE - 1) & ~(PAGE - 1));
    printf("mprotect of heap pages: %s\n", result(mprotect(hp, 2 * PAGE, PROT_READ) == 0));
    sbrk(-8 * PAGE);
    h = sbrk(8 * PAGE);
    nonzero = 0;
    for (long i = 0; i < 8 * PAGE; i++)
        nonzero += h[i] != 0;
    memset(h, 1, 8 * PAGE);
    printf("heap given back read-only and grown again: %ld non-zero bytes, writable\n", nonzero);
    sbrk(-8 * PAGE);

    /* A break that grows by small steps (HRT then makes the rest of each 2 MiB page it grows
     * into present at once): every step reads zero, and above the break is still no mapping. */
    bad = 0;
    char *base = sbrk(0);
    for (int i = 0; i < 300; i++) {
        unsigned char *p = sbrk(20 * 1024 + 4096 * (i % 3));
        for (long k = 0; k < 20 * 1024; k++)
            bad += p[k] != 0;
        memset(p, 0x42, 20 * 1024);
    }
    printf("300 small growths: %ld non-zero bytes where the break grew\n", bad);
    top = sbrk(0);
    above = (char *)(((uintptr_t)top + PAGE - 1) & ~(PAGE - 1)) + PAGE;
    printf("mprotect above the grown break: %s\n", result(mprotect(above, PAGE, PROT_READ) == 0));
    errno = 0;
    n = read(fd, above, 16);
    printf("read into memory above the grown break: %zd (%s)\n", n, n < 0 ? strerror(errno) : "read");
    brk(base);

    /* malloc's own trims: large blocks freed at the top, then calloc. */
    bad = 0;
    for (int i = 0; i < 200; i++) {
        size_t len = 100000 + 3000 * (i % 7);
        char *a = malloc(len);
        memset(a, 0xee, len);
        char *b = malloc(len);
        memset(b, 0xdd, len);
        free(b);
        free(a);
        long *c = calloc(len / sizeof(long), sizeof(long));
        for (size_t j = 0; j < len / sizeof(long); j++)
            bad += c[j] != 0;
        free(c);
    }
    printf("200 rounds of malloc, free and calloc: %ld non-zero words from calloc\n", bad);
    return 0;
}
