// mmap with an address hint and no MAP_FIXED, as Linux places it: at the hint (rounded down to a
// page, on x86-64) when that range is free, for anonymous, PROT_NONE, stack and private file mappings;
// elsewhere, leaving the mapping there untouched, when any of it is in use.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MB (1ul << 20)

static void check(const char *what, void *got, void *want) {
    printf("%s: %s\n", what, got == MAP_FAILED ? "failed" : got == want ? "at the hint" : "elsewhere");
}

int main(void) {
    setvbuf(stdout, 0, _IOLBF, 0);
    printf("start\n");
    const int rw = PROT_READ | PROT_WRITE, anon = MAP_PRIVATE | MAP_ANONYMOUS;
    // A free range: reserved, then given back.
    char *r = mmap(0, 16 * MB, PROT_NONE, anon, -1, 0);
    munmap(r, 16 * MB);
    char *a = mmap(r + MB, MB, rw, anon, -1, 0);
    check("anonymous", a, r + MB);
    a[0] = 'a';
    char *u = mmap(r + 3 * MB + 123, 4096, rw, anon, -1, 0);
    check("unaligned hint, rounded down", u, r + 3 * MB);
    char *n = mmap(r + 5 * MB, 2 * MB, PROT_NONE, anon, -1, 0);
    check("PROT_NONE", n, r + 5 * MB);
    char *s = mmap(r + 8 * MB, MB, rw, anon | MAP_STACK, -1, 0);
    check("stack", s, r + 8 * MB);
    char path[] = "/tmp/hrt-hints-XXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    write(fd, "file bytes", 10);
    char *f = mmap(r + 10 * MB, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    check("private file", f, r + 10 * MB);
    printf("file reads: %.10s\n", f);
    // In use: placed elsewhere, the old mapping untouched.
    char *again = mmap(a, 4096, rw, anon, -1, 0);
    check("on a mapping", again, a);
    char *over = mmap(r + 9 * MB - 4096, 2 * 4096, rw, anon, -1, 0);
    check("overlapping the stack's start", over, r + 9 * MB - 4096);
    printf("old mapping still reads: %c\n", a[0]);
    printf("the new one reads zero: %d\n", again[0]);
    return 0;
}
