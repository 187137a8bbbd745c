// MADV_DONTNEED on a private file mapping whose descriptor is gone: Linux's mapping holds its
// file, so the dropped pages read the file's current bytes again however the descriptor went
// (close, dup2 over it, close_range), also after the file was unlinked, after mremap moved
// the mapping, in a forked child, and after thousands of mappings came and went (a leak of
// what keeps each file would run out). Prints what each page reads; the last line says done.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096

static char path[] = "/tmp/hrt-madvise-closed-XXXXXX";

// Fills page `page` of the file with `c`, through a descriptor of its own.
static void fill(int page, char c) {
    char buf[PG];
    memset(buf, c, PG);
    int fd = open(path, O_WRONLY);
    if (fd < 0 || pwrite(fd, buf, PG, (off_t)page * PG) != PG) {
        perror("fill");
        exit(1);
    }
    close(fd);
}

// A private writable mapping of the file's first three pages; the descriptor is returned too.
static char *map(int *fd_out) {
    int fd = open(path, O_RDONLY);
    char *p = mmap(0, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (fd < 0 || p == MAP_FAILED) {
        perror("map");
        exit(1);
    }
    *fd_out = fd;
    return p;
}

// Writes into page `page` (a private copy), lets the file change to `c` there, drops the copy,
// and prints what the page reads.
static void drop(const char *what, char *p, int page, char c) {
    memset(p + page * PG, 'x', PG);
    fill(page, c);
    int r = madvise(p + page * PG, PG, MADV_DONTNEED);
    printf("%s: madvise %d, reads %c%c\n", what, r, p[page * PG], p[page * PG + PG - 1]);
}

int main(void) {
    int tmp = mkstemp(path);
    if (tmp < 0 || ftruncate(tmp, 3 * PG) != 0) {
        perror("mkstemp");
        return 1;
    }
    close(tmp);
    fill(0, 'a'), fill(1, 'b'), fill(2, 'c');

    int fd;
    char *p = map(&fd);
    drop("open descriptor", p, 0, 'A');
    close(fd);
    drop("after close", p, 1, 'B');

    char *q = map(&fd);
    int other = open("/dev/null", O_RDONLY);
    dup2(other, fd);
    close(other);
    drop("after dup2 over it", q, 2, 'C');
    close(fd);

    char *r = map(&fd);
    close_range(fd, ~0U, 0);
    drop("after close_range", r, 0, 'D');

    char *dst = mmap(0, 3 * PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *m = mremap(r, 3 * PG, 3 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
    printf("mremap moved: %d\n", m != MAP_FAILED && m != r);
    drop("after mremap", m, 1, 'E');

    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        drop("in a forked child", p, 2, 'F');
        fflush(stdout);
        _exit(0);
    }
    int status;
    waitpid(child, &status, 0);
    printf("child: %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);

    unlink(path);
    // The file has no name now: each mapping still reads it (the last byte each wrote).
    int r1 = madvise(p, 3 * PG, MADV_DONTNEED);
    int r2 = madvise(q, 3 * PG, MADV_DONTNEED);
    printf("after unlink: %d %d, reads %c%c%c %c%c%c\n", r1, r2, p[0], p[PG], p[2 * PG], q[0], q[PG], q[2 * PG]);
    munmap(p, 3 * PG), munmap(q, 3 * PG), munmap(m, 3 * PG);

    // Many mappings made, their descriptors closed, unmapped: nothing of them stays held.
    tmp = mkstemp(strcpy(path, "/tmp/hrt-madvise-closed-XXXXXX"));
    if (tmp < 0 || ftruncate(tmp, 3 * PG) != 0) {
        perror("mkstemp");
        return 1;
    }
    close(tmp);
    for (int i = 0; i < 6000; i++) {
        char *t = map(&fd);
        close(fd);
        munmap(t, 3 * PG);
    }
    char *last = map(&fd);
    close(fd);
    drop("after 6000 mappings came and went", last, 0, 'G');
    unlink(path);
    printf("madvise closed file: done\n");
    return 0;
}
