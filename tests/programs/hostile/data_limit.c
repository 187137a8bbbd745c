/* RLIMIT_DATA as Linux (4.7+) enforces it, and address space filled up to the heap. With the
 * soft limit at 0: the break does not grow, private writable mappings are refused unless the
 * hard limit allows them (Linux's exception for Valgrind), shared and read-only ones are
 * allowed, and so is PROT_NONE, which mprotect may then not make writable. With 1 GiB: a 2 GiB
 * private writable mapping is refused, 1 MiB is not. Then, without a limit, read-only private
 * mappings of /dev/zero fill the address space as musl's libc-test does (halving sizes until
 * none fits): the break may not grow after that, and the fill costs no memory (VmRSS). Under
 * hrt the limit was not enforced (the test's `while (malloc(1));` grew the heap until the
 * host ran out of memory), the break kept growing into its reserved window, and the /dev/zero
 * mappings were read (zeros written into every page). The break's growth also counts the
 * private writable mappings (an 80 MiB mapping, then an 80 MiB break under 100 MiB: refused;
 * under hrt it grew). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *ok(void *p) { return p == MAP_FAILED ? strerror(errno) : "mapped"; }

static void try_maps(const char *when) {
    errno = 0;
    void *b = sbrk(4096);
    printf("%s: sbrk(4096) %s\n", when, b == (void *)-1 ? strerror(errno) : "grew");
    if (b != (void *)-1)
        sbrk(-4096);
    void *p = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("%s: private read-write 1 MiB: %s\n", when, ok(p));
    void *s = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    printf("%s: shared read-write 1 MiB: %s\n", when, ok(s));
    void *r = mmap(0, 1 << 20, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("%s: private read-only 1 MiB: %s\n", when, ok(r));
    void *n = mmap(0, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("%s: PROT_NONE 1 MiB: %s", when, ok(n));
    if (n != MAP_FAILED)
        printf(", made writable: %s", mprotect(n, 1 << 20, PROT_READ | PROT_WRITE) ? strerror(errno) : "yes");
    printf("\n");
    void *big = mmap(0, 2UL << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    printf("%s: private read-write 2 GiB: %s\n", when, ok(big));
    for (void **m = (void *[]){p, s, r, n, 0}; *m; m++)
        if (*m != MAP_FAILED)
            munmap(*m, 1 << 20);
    if (big != MAP_FAILED)
        munmap(big, 2UL << 30);
}

static long rss_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

/* The largest read-only mapping of `fd` that fits (libc-test's search; read-only rather than
 * its PROT_NONE, so that memory written there would count in VmRSS). */
static size_t largest(int fd) {
    size_t n = SIZE_MAX / 2 + 1, i;
    for (i = n; i >= 4096; i /= 2) {
        void *p = mmap(0, n, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            n -= i / 2;
        } else {
            munmap(p, n);
            n += i / 2;
        }
    }
    return n & -4096;
}

int main(void) {
    struct rlimit unlimited, lim;
    getrlimit(RLIMIT_DATA, &unlimited);
    lim = (struct rlimit){0, unlimited.rlim_max};
    setrlimit(RLIMIT_DATA, &lim);
    try_maps("soft 0, hard unlimited");
    lim = (struct rlimit){1UL << 30, unlimited.rlim_max};
    setrlimit(RLIMIT_DATA, &lim);
    try_maps("soft 1 GiB");
    /* The break's growth counts with the private writable mappings (Linux's may_expand_vm):
     * under hrt only the heap and the data segment were counted, and both grew. */
    lim = (struct rlimit){100UL << 20, unlimited.rlim_max};
    setrlimit(RLIMIT_DATA, &lim);
    void *m80 = mmap(0, 80 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (long grow = 80 << 20; grow >= 10 << 20; grow -= 70 << 20) {
        errno = 0;
        void *b = sbrk(grow);
        printf("soft 100 MiB, 80 MiB %s: sbrk(%ld MiB) %s\n", ok(m80), grow >> 20,
               b == (void *)-1 ? strerror(errno) : "grew");
        if (b != (void *)-1)
            sbrk(-grow);
    }
    if (m80 != MAP_FAILED)
        munmap(m80, 80 << 20);
    setrlimit(RLIMIT_DATA, &unlimited);
    /* Lowering the hard limit is for good: the rest runs in a child. */
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        lim = (struct rlimit){0, 0};
        setrlimit(RLIMIT_DATA, &lim);
        try_maps("soft 0, hard 0");
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    setrlimit(RLIMIT_DATA, &unlimited);
    int zero = open("/dev/zero", O_RDWR);
    long before = rss_kib();
    void *maps[64];
    size_t sizes[64];
    int k = 0;
    for (size_t m; k < 64 && (m = largest(zero)) != 0; k++) {
        sizes[k] = m;
        maps[k] = mmap(0, m, PROT_READ, MAP_PRIVATE, zero, 0);
        if (maps[k] == MAP_FAILED)
            return 1;
    }
    long grew = rss_kib() - before;
    errno = 0;
    void *b = sbrk(1 << 20);
    printf("address space filled (%s): sbrk(1 MiB) %s, resident memory %s\n", k < 64 ? "all of it" : "not all",
           b == (void *)-1 ? strerror(errno) : "grew", grew < 65536 ? "grew less than 64 MiB" : "grew more");
    if (grew >= 65536)
        fprintf(stderr, "VmRSS grew %ld KiB\n", grew);
    for (int i = 0; i < k; i++)
        munmap(maps[i], sizes[i]);
    return 0;
}
