// read and write with buffers the program may not use, found different by a differential
// fuzzer (stop 100): Linux looks at the descriptor first (EBADF for one not open that way,
// ESPIPE for pread on a pipe, EINVAL for a negative position) and copies only what there is
// (0 at the end of a file, EAGAIN from an empty pipe, with a read-only buffer); hrt said
// EFAULT for all of them, and let zero-length transfers with pointers past the user address
// space succeed. Also: mmap of an O_PATH descriptor is EBADF (hrt: EACCES), and link with
// AT_EMPTY_PATH of a descriptor the program lacks is EBADF before the new name's walk.
// Works in a fresh directory under /tmp.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "scratch.h"

// An address no program has mapped (volatile: the compiler does not reason about it).
static char *volatile bad_address = (char *)1;

static void said(const char *what, long r) {
    printf("%-40s %ld %s\n", what, r < 0 ? -errno : r, r < 0 ? strerror(errno) : "");
}

int main(void) {
    char dir[] = "/tmp/hrt-buffer-checks-XXXXXX";
    if (enter_scratch(dir))
        return 1;
    char *ro = mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *bad = bad_address;
    int f = open("f", O_CREAT | O_RDWR | O_TRUNC, 0644);
    said("read at EOF into read-only memory", read(f, ro, 100));
    said("pread past EOF into read-only memory", pread(f, ro, 100, 50));
    int p[2];
    if (pipe2(p, O_NONBLOCK))
        return 1;
    said("read empty pipe into read-only memory", read(p[0], ro, 100));
    struct iovec v = {ro, 100};
    said("readv empty pipe into read-only memory", readv(p[0], &v, 1));
    if (write(p[1], "ab", 2) != 2)
        return 1;
    close(p[1]);
    char *m = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(m + 4096, 4096, PROT_READ);
    said("read 2 bytes, buffer writable then not", read(p[0], m + 4094, 100));
    said("read pipe at EOF into read-only memory", read(p[0], ro, 100));
    close(p[0]);

    int rdonly = open("f", O_RDONLY), wronly = open("f", O_WRONLY);
    if (pipe(p))
        return 1;
    struct iovec bv = {bad, 10};
    said("write(read-only fd, bad buffer)", write(rdonly, bad, 10));
    said("writev(read-only fd, bad buffer)", writev(rdonly, &bv, 1));
    said("read(write-only fd, bad buffer)", read(wronly, bad, 10));
    said("readv(write-only fd, bad buffer)", readv(wronly, &bv, 1));
    said("pread(pipe, bad buffer)", pread(p[0], bad, 10, 0));
    said("pwrite(pipe, bad buffer)", pwrite(p[1], bad, 10, 0));
    said("write(fd, bad buffer)", write(f, bad, 10));
    char b[8];
    said("pwrite(-1, position -1)", pwrite(-1, "x", 1, -1));
    said("pread(-1, position -1)", pread(-1, b, 1, -1));
    said("pread(fd, position -1)", pread(f, b, 1, -1));
    said("write(fd, (void *)-1, 0)", write(f, (void *)-1L, 0));
    said("read(fd, 2^47, 0)", read(f, (void *)0x800000000000L, 0));
    said("read(fd, unmapped, 0)", read(f, bad, 0));

    close(open("g", O_CREAT | O_RDWR, 0644));
    int path = open("g", O_PATH);
    void *r = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, path, 0);
    said("mmap shared read-write of an O_PATH fd", r == MAP_FAILED ? -1 : 0);
    r = mmap(0, 4096, PROT_READ, MAP_SHARED, path, 0);
    said("mmap shared read-only of an O_PATH fd", r == MAP_FAILED ? -1 : 0);
    said("linkat(-1, \"\", AT_EMPTY_PATH) to nodir/l", linkat(-1, "", AT_FDCWD, "nodir/l", AT_EMPTY_PATH));
    close(path);
    unlink("f");
    unlink("g");
    if (chdir("/") || rmdir(dir))
        printf("left behind\n");
    printf("buffer checks: done\n");
    return 0;
}
