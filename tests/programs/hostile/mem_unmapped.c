// Memory the program unmapped is gone, as on Linux: touching it raises SIGSEGV (SEGV_MAPERR, with
// the address touched), system calls given a pointer there (forwarded to the host or answered by
// the kernel) fail with EFAULT, and a new mapping at the same addresses reads zero. Covers munmap of a whole mapping, of its middle and its tail,
// of large mappings (a whole 2 MiB page inside one, 64 MiB), mremap shrinking and moving, and a
// page another thread (another CPU) touched before the unmap; addresses above user space fault as
// unmapped too.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"
#include "report.h"

#define PAGE 4096UL
#define MIB (1UL << 20)

static int zero_fd, pipe_fds[2];

static char *map(size_t len) {
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        _exit(1);
    }
    memset(p, 'x', len);
    return p;
}

// Reads and writes at `p` (expected to fault) and system calls given it as a buffer.
static void gone(const char *what, char *p) {
    char label[96];
    snprintf(label, sizeof label, "%s", what);
    probe(label, (volatile unsigned char *)p, 0);
    probe(label, (volatile unsigned char *)p, 1);
    snprintf(label, sizeof label, "%s: read into it", what);
    report(label, read(zero_fd, p, 16));
    snprintf(label, sizeof label, "%s: write from it", what);
    report(label, write(pipe_fds[1], p, 16));
    snprintf(label, sizeof label, "%s: clock_gettime into it", what);
    report(label, syscall(SYS_clock_gettime, CLOCK_MONOTONIC, p));
}

// Whether `[p, p + len)` reads zero.
static int reads_zero(const char *p, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (p[i])
            return 0;
    return 1;
}

// A new fixed mapping at `p` (free again): granted at that address, reading zero, usable.
static void reuse(const char *what, char *p, size_t len) {
    char *q = mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    printf("%s: remapped %s", what, q == p ? "at the same address" : "elsewhere");
    if (q == p) {
        printf(", reads zero %d", reads_zero(q, len));
        memset(q, 'y', len);
        printf(", read into it %zd", read(zero_fd, q, 16));
        munmap(q, len);
    }
    printf("\n");
}

static void whole(void) {
    char *p = map(4 * PAGE);
    munmap(p, 4 * PAGE);
    gone("whole first page", p);
    gone("whole last page", p + 3 * PAGE);
    reuse("whole", p, 4 * PAGE);
}

static void partial(void) {
    char *p = map(8 * PAGE);
    munmap(p + 2 * PAGE, 3 * PAGE); // the middle
    munmap(p + 7 * PAGE, PAGE);     // the tail
    probe("partial page 1", (volatile unsigned char *)p + PAGE, 1);
    gone("partial middle first", p + 2 * PAGE);
    gone("partial middle last", p + 4 * PAGE + 100);
    probe("partial page 5", (volatile unsigned char *)p + 5 * PAGE, 1);
    probe("partial page 6", (volatile unsigned char *)p + 7 * PAGE - 1, 1);
    gone("partial tail", p + 7 * PAGE);
    printf("partial kept data: %d\n", p[0] == 'x' && p[5 * PAGE] == 'x' && p[6 * PAGE] == 'x');
    reuse("partial middle", p + 2 * PAGE, 3 * PAGE);
    munmap(p, 8 * PAGE);
}

static void large(void) {
    // 6 MiB from a 2 MiB boundary: the middle 2 MiB page goes, its neighbours stay.
    char *raw = map(10 * MIB);
    char *p = (char *)(((uintptr_t)raw + 2 * MIB - 1) & ~(2 * MIB - 1));
    munmap(p + 2 * MIB, 2 * MIB);
    probe("large below", (volatile unsigned char *)p + 2 * MIB - 1, 1);
    gone("large first", p + 2 * MIB);
    gone("large last", p + 4 * MIB - 1);
    probe("large above", (volatile unsigned char *)p + 4 * MIB, 1);
    reuse("large", p + 2 * MIB, 2 * MIB);
    munmap(raw, 10 * MIB);

    char *big = map(64 * MIB);
    munmap(big, 64 * MIB);
    gone("64 MiB first", big);
    gone("64 MiB middle", big + 33 * MIB + 5 * PAGE);
    gone("64 MiB last", big + 64 * MIB - 1);
    reuse("64 MiB", big, 64 * MIB);
}

static void remapped(void) {
    char *p = map(4 * PAGE);
    char *r = mremap(p, 4 * PAGE, PAGE, 0);
    printf("shrink: same address %d\n", r == p);
    probe("shrink kept", (volatile unsigned char *)p + 10, 1);
    gone("shrink cut", p + PAGE);
    gone("shrink cut end", p + 4 * PAGE - 1);
    munmap(p, PAGE);

    // Growing the first page of a three-page mapping cannot happen in place: it moves.
    char *m = map(3 * PAGE);
    m[0] = 'a';
    char *n = mremap(m, PAGE, 2 * PAGE, MREMAP_MAYMOVE);
    printf("move: moved %d, data %c, new page zero %d\n", n != m, n[0], reads_zero(n + PAGE, PAGE));
    gone("moved from", m);
    probe("move neighbour", (volatile unsigned char *)m + PAGE, 1);
    munmap(m + PAGE, 2 * PAGE);
    munmap(n, 2 * PAGE);
}

// Another thread touches the pages (so its CPU may cache them), waits while the main thread
// unmaps them, then touches them again.
static char *shared;
static volatile int phase;

static void *toucher(void *arg) {
    (void)arg;
    shared[0] = 'z';
    shared[PAGE] = 'z';
    phase = 1;
    while (phase != 2)
        ;
    probe("other thread", (volatile unsigned char *)shared, 0);
    probe("other thread second page", (volatile unsigned char *)shared + PAGE, 1);
    return NULL;
}

static void threads(void) {
    shared = map(2 * PAGE);
    pthread_t t;
    pthread_create(&t, NULL, toucher, NULL);
    while (phase != 1)
        ;
    munmap(shared, 2 * PAGE);
    phase = 2;
    pthread_join(t, NULL);
}

// A 1 MiB malloc (glibc mmaps it) freed: its memory is gone too.
static void malloc_block(void) {
    char *b = malloc(MIB);
    memset(b, 1, MIB);
    volatile uintptr_t at = (uintptr_t)b; // (a number: the compiler warns of any use after free)
    free(b);
    b = (char *)at;
    probe("freed malloc block", (volatile unsigned char *)b + MIB / 2, 0);
}

// Addresses above user space: the last page below 2^47 and the kernel's half, which Linux
// reports as unmapped (SEGV_MAPERR) whatever is there (hrt said SEGV_ACCERR in some runs).
static void kernel_half(void) {
    uintptr_t addrs[] = {(1UL << 47) - PAGE, 0xffff800000000000UL, 0xffffffff81000000UL, 0xfffffffffffff000UL};
    for (int i = 0; i < 4; i++) {
        char what[48];
        snprintf(what, sizeof what, "above user space %#lx", (unsigned long)addrs[i]);
        probe(what, (volatile unsigned char *)addrs[i], 0);
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    probe_setup();
    zero_fd = open("/dev/zero", O_RDONLY);
    if (zero_fd < 0 || pipe(pipe_fds))
        return 1;
    whole();
    partial();
    large();
    remapped();
    threads();
    malloc_block();
    kernel_half();
    return 0;
}
