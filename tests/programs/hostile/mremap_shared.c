// mremap of MAP_SHARED mappings as Linux does it: a file's mapping grown after the file grew
// (what Python's mmap.resize does: ftruncate, then mremap with MREMAP_MAYMOVE), grown in place,
// grown past the end of the file (SIGBUS there until the file covers the page), moved with
// MREMAP_FIXED and MREMAP_DONTUNMAP (both ranges show the same file pages), part of a mapping
// moved, a read-only mapping moved (still not writable), shrunk; anonymous shared memory kept
// by MREMAP_DONTUNMAP (both ranges the same memory) and moved after a fork (still shared with
// the child); mremap with an old length of 0 (a second mapping of shared memory; private
// memory EINVAL); the errors (two mappings in one range: EFAULT;
// growth without MREMAP_MAYMOVE where the next page is taken: ENOMEM). Every store through a
// moved or grown mapping is checked in the file with pread. One line per case.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peek.h"

#define PG 4096
#define RW (PROT_READ | PROT_WRITE)


// Whether storing c at p works, or the signal's name.
static const char *poke(volatile char *p, char c) {
    static char out[4][16];
    static int n;
    char *o = out[n++ % 4];
    int sig = sigsetjmp(peek_back, 1);
    if (sig == 0) {
        *p = c;
        snprintf(o, 16, "ok");
    } else {
        snprintf(o, 16, "%s", sigabbrev_np(sig));
    }
    return o;
}

// The byte of the file at `off`, read with pread (-1 past its end).
static int in_file(int fd, off_t off) {
    char c;
    return pread(fd, &c, 1, off) == 1 ? c : -1;
}

// A fresh file of `pages` pages, page i holding 'a' + i at its start.
static int file_of(int pages) {
    char name[] = "/tmp/hrt-mremap-shared-XXXXXX";
    int fd = mkstemp(name);
    if (fd < 0) {
        perror("mkstemp");
        exit(1);
    }
    unlink(name);
    if (ftruncate(fd, pages * PG) != 0) {
        perror("ftruncate");
        exit(1);
    }
    for (int i = 0; i < pages; i++) {
        char c = 'a' + i;
        pwrite(fd, &c, 1, (off_t)i * PG);
    }
    return fd;
}

static char *map(int fd, int pages, int prot, off_t off) {
    char *p = mmap(0, pages * PG, prot, MAP_SHARED, fd, off);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

static const char *err(void *p) { return p == MAP_FAILED ? strerrorname_np(errno) : "ok"; }

int main(void) {
    peek_catch(SIGSEGV);
    peek_catch(SIGBUS);

    // Python's mmap.resize: the file grows, then the mapping moves and grows.
    int fd = file_of(2);
    char *p = map(fd, 2, RW, 0);
    p[1] = 'X';
    ftruncate(fd, 5 * PG);
    char *q = mremap(p, 2 * PG, 5 * PG, MREMAP_MAYMOVE);
    const char *stored = poke(q + 4 * PG + 1, 'Y');
    printf("resize: %s, kept %c%c %c, new page %s, store %s, file %c\n", err(q), q[0], q[1], q[PG], peek(q + 4 * PG),
           stored, in_file(fd, 4 * PG + 1));
    q[PG + 2] = 'Z';
    printf("resize: old store reaches the file: %c\n", in_file(fd, PG + 2));
    munmap(q, 5 * PG);
    close(fd);

    // Grown in place: the pages after it are free.
    fd = file_of(4);
    char *hole = mmap(0, 4 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p = mmap(hole, PG, RW, MAP_SHARED | MAP_FIXED, fd, 0);
    munmap(hole + PG, 3 * PG);
    q = mremap(p, PG, 3 * PG, 0);
    stored = poke(q + 2 * PG + 3, 'W');
    printf("in place: %s, same address %d, pages %c %c %c, store %s file %c\n", err(q), q == p, q[0], q[PG],
           q[2 * PG], stored, in_file(fd, 2 * PG + 3));
    // Without MREMAP_MAYMOVE where the next page is taken: ENOMEM.
    char *next = mmap(q + 3 * PG, PG, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    char *r = mremap(q, 3 * PG, 4 * PG, 0);
    printf("in place, next page taken: %s (next mapped %d)\n", err(r), next != MAP_FAILED);
    munmap(q, 4 * PG);
    close(fd);

    // Grown past the end of the file: SIGBUS there until the file covers the page.
    fd = file_of(1);
    p = map(fd, 1, RW, 0);
    q = mremap(p, PG, 3 * PG, MREMAP_MAYMOVE);
    stored = poke(q + PG, 'V');
    printf("past the end: %s, page 0 %c, page 2 %s, store %s\n", err(q), q[0], peek(q + 2 * PG), stored);
    ftruncate(fd, 3 * PG);
    const char *seen = peek(q + 2 * PG);
    stored = poke(q + 2 * PG + 5, 'U');
    printf("past the end, file grown: page 2 %s, store %s, file %c\n", seen, stored, in_file(fd, 2 * PG + 5));
    munmap(q, 3 * PG);
    close(fd);

    // MREMAP_FIXED: onto a chosen place (replacing what is there); the old range is gone.
    fd = file_of(2);
    p = map(fd, 2, RW, 0);
    char *target = mmap(0, 3 * PG, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(target, 7, 3 * PG);
    q = mremap(p, 2 * PG, 3 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, target);
    stored = poke(q + PG + 9, 'T');
    printf("fixed: %s, at target %d, pages %c %c, third page %s, old %s, store %s file %c\n", err(q), q == target, q[0],
           q[PG], peek(q + 2 * PG), peek(p), stored, in_file(fd, PG + 9));
    munmap(q, 3 * PG);
    close(fd);

    // MREMAP_DONTUNMAP: both ranges show the same file pages.
    fd = file_of(2);
    p = map(fd, 2, RW, 0);
    q = mremap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 0);
    if (q != MAP_FAILED)
        q[PG + 4] = 'S';
    printf("dontunmap: %s, new %c %c, old sees the store %s\n", err(q), q == MAP_FAILED ? '-' : q[0],
           q == MAP_FAILED ? '-' : q[PG], peek(p + PG + 4));
    if (q != MAP_FAILED)
        munmap(q, 2 * PG);
    munmap(p, 2 * PG);
    close(fd);

    // Part of a mapping moved: its pages, the rest stays.
    fd = file_of(4);
    p = map(fd, 4, RW, 0);
    q = mremap(p + PG, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, mmap(0, 2 * PG, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    stored = poke(q + 1, 'R');
    printf("part: %s, moved %c %c, left %c %s %s %c, store %s file %c\n", err(q), q[0], q[PG], p[0], peek(p + PG),
           peek(p + 2 * PG), p[3 * PG], stored, in_file(fd, PG + 1));
    munmap(p, 4 * PG);
    munmap(q, 2 * PG);
    close(fd);

    // A read-only mapping moved stays read-only, and cannot be made writable.
    fd = file_of(2);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    int rfd = open(path, O_RDONLY);
    p = map(rfd, 2, PROT_READ, 0);
    q = mremap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, mmap(0, 2 * PG, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    stored = poke(q, 'Q');
    int prot = mprotect(q, PG, RW);
    printf("read-only: %s, page 1 %c, store %s, mprotect write %s\n", err(q), q[PG], stored,
           prot == 0 ? "ok" : strerrorname_np(errno));
    munmap(q, 2 * PG);
    close(rfd);

    // Shrunk: the tail is gone, the rest is the file's.
    p = map(fd, 2, RW, 0);
    q = mremap(p, 2 * PG, PG, 0);
    printf("shrunk: %s, same %d, page 0 %c, tail %s\n", err(q), q == p, q[0], peek(p + PG));
    munmap(q, PG);

    // Two mappings in one range: EFAULT.
    int fd2 = file_of(1);
    hole = mmap(0, 2 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mmap(hole, PG, RW, MAP_SHARED | MAP_FIXED, fd, 0);
    mmap(hole + PG, PG, RW, MAP_SHARED | MAP_FIXED, fd2, 0);
    q = mremap(hole, 2 * PG, 3 * PG, MREMAP_MAYMOVE);
    printf("two mappings: %s\n", err(q));
    munmap(hole, 2 * PG);
    close(fd);
    close(fd2);

    // Anonymous shared memory with MREMAP_DONTUNMAP: both ranges show the same memory.
    p = mmap(0, 2 * PG, RW, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    p[PG] = 'P';
    q = mremap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_DONTUNMAP, 0);
    if (q != MAP_FAILED)
        q[PG + 1] = 'O';
    printf("anonymous dontunmap: %s, new %c, old sees the store %s\n", err(q), q == MAP_FAILED ? '-' : q[PG],
           peek(p + PG + 1));
    if (q != MAP_FAILED)
        munmap(q, 2 * PG);
    munmap(p, 2 * PG);

    // An old length of 0: a second mapping of the same shared memory (the old one stays);
    // of private memory EINVAL, without MREMAP_MAYMOVE ENOMEM.
    p = mmap(0, 2 * PG, RW, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    strcpy(p, "one");
    q = mremap(p, 0, 2 * PG, MREMAP_MAYMOVE);
    if (q != MAP_FAILED)
        strcpy(q, "two");
    printf("second mapping of anonymous shared memory: %s, old sees %s\n", err(q), p);
    r = mremap(p, 0, 2 * PG, 0);
    printf("second mapping without maymove: %s\n", err(r));
    if (q != MAP_FAILED)
        munmap(q, 2 * PG);
    munmap(p, 2 * PG);
    p = mmap(0, PG, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("second mapping of private memory: %s\n", err(mremap(p, 0, PG, MREMAP_MAYMOVE)));
    munmap(p, PG);
    fd = file_of(1);
    p = map(fd, 1, RW, 0);
    q = mremap(p, 0, 3 * PG, MREMAP_MAYMOVE);
    if (q != MAP_FAILED)
        q[1] = 'N';
    printf("second mapping of a file: %s, old sees the store %c, page 2 %s\n", err(q), p[1],
           q == MAP_FAILED ? "-" : peek(q + 2 * PG));
    if (q != MAP_FAILED)
        munmap(q, 3 * PG);
    munmap(p, PG);
    close(fd);

    // Anonymous shared memory moved after a fork: still shared with the child.
    p = mmap(0, 2 * PG, RW, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    strcpy(p + PG, "parent");
    int go[2];
    pipe(go);
    pid_t child = fork();
    if (child == 0) {
        char c;
        read(go[0], &c, 1);
        strcpy(p + PG, "child");
        _exit(0);
    }
    q = mremap(p, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, mmap(0, 2 * PG, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    write(go[1], "x", 1);
    int status;
    waitpid(child, &status, 0);
    printf("anonymous after fork: %s, moved sees the child's store: %s, old %s\n", err(q), q + PG, peek(p));
    munmap(q, 2 * PG);

    printf("mremap shared: done\n");
    return 0;
}
