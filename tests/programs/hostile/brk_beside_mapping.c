/* The program break and fixed mappings above it, as on Linux: the address space just above
 * the break is free (MAP_FIXED_NOREPLACE succeeds there; under hrt it was EEXIST, the break's
 * window); the break refuses to grow over a mapping (it grew over one, and lowered again
 * unmapped it: SIGSEGV on the next touch), and grows up to a page below one.
 * Usage: brk_beside_mapping */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PG 4096L
#define RW (PROT_READ | PROT_WRITE)

static void on_segv(int sig) {
    (void)sig;
    static const char m[] = "SIGSEGV\n";
    write(1, m, sizeof m - 1);
    _exit(1);
}

static long brk_to(long to) { return syscall(SYS_brk, to); }

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGSEGV, on_segv);
    long start = (brk_to(0) + PG - 1) & ~(PG - 1);

    /* A page four pages above the break. */
    char *near = mmap((void *)(start + 4 * PG), PG, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    printf("MAP_FIXED_NOREPLACE 4 pages above the break: %s\n", near == MAP_FAILED ? strerrorname_np(errno) : "ok");
    if (near == MAP_FAILED)
        near = mmap((void *)(start + 4 * PG), PG, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    near[0] = 'N';
    /* Linux keeps the break a page short of the next mapping. */
    printf("brk up to it: %s\n", brk_to(start + 4 * PG) == start + 4 * PG ? "grown" : "refused");
    printf("brk to a page below it: %s\n", brk_to(start + 3 * PG) == start + 3 * PG ? "grown" : "refused");
    printf("brk over it: %s\n", brk_to(start + 8 * PG) == start + 8 * PG ? "grown" : "refused");
    printf("its byte: %c\n", near[0]);
    brk_to(start);
    printf("after the break went back down: %c\n", near[0]);
    munmap(near, PG);

    /* A page 1 MiB into the next 2 MiB: the break grows to just below it, not over it. */
    long top = (start + (4L << 20)) & ~((2L << 20) - 1);
    char *far = mmap((void *)(top + (1 << 20)), PG, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    printf("a page further up: %s\n", far == MAP_FAILED ? strerrorname_np(errno) : "ok");
    if (far == MAP_FAILED)
        return 1;
    far[0] = 'F';
    long below = top + (1 << 20) - PG;
    printf("brk to its start: %s\n", brk_to(below + PG) == below + PG ? "grown" : "refused");
    printf("brk to a page below it: %s\n", brk_to(below) == below ? "grown" : "refused");
    memset((void *)start, 1, below - start);
    printf("brk over it: %s\n", brk_to(top + (1 << 20) + PG) == top + (1 << 20) + PG ? "grown" : "refused");
    brk_to(start);
    printf("its byte after the break went back down: %c\n", far[0]);
    return 0;
}
