// Forwarded calls that write into the program's memory fail with EFAULT on pages without
// PROT_WRITE, as Linux's copies to user space do (the monitor writes guest memory itself, so
// the page tables alone do not stop it); a read that runs from a writable page into a
// read-only one moves the bytes before it. readv stops at the first unusable buffer (a short
// count, not EFAULT, once something was read).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static void show(const char *what, long r) {
    printf("%s: %ld %s\n", what, r, r < 0 ? strerror(errno) : "");
}

int main(void) {
    char path[] = "/tmp/hrt-ro-XXXXXX";
    int file = mkstemp(path), fds[2];
    if (file < 0 || pipe(fds) != 0)
        return 1;
    static char data[16384];
    memset(data, 'd', sizeof data);
    if (write(file, data, sizeof data) != (ssize_t)sizeof data)
        return 1;
    // Page 0 read-write, page 1 read-only from mmap, page 2 made read-only by mprotect.
    char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || ro == MAP_FAILED)
        return 1;
    show("mprotect read-only", mprotect(p + 4096, 2 * 4096, PROT_READ));
    show("pread into read-only mmap", pread(file, ro, 16, 0));
    show("pread into mprotected page", pread(file, p + 8192, 16, 0));
    show("pread across into read-only", pread(file, p, 8192, 0));
    if (write(fds[1], "pipe data", 9) != 9)
        return 1;
    show("read pipe into read-only", read(fds[0], ro, 9));
    show("read pipe into writable", read(fds[0], p, 9));
    show("fstat into read-only", fstat(file, (struct stat *)ro));
    show("pipe into read-only", pipe((int *)ro));
    show("readlink into read-only", readlink("/proc/self/exe", ro, 64));
    show("getcwd into read-only", getcwd(ro, 64) ? 0 : -1);
    // The system call, not the vDSO (which would store there itself and fault).
    show("clock_gettime into read-only", syscall(SYS_clock_gettime, CLOCK_MONOTONIC, ro));
    // readv: the second buffer is read-only, then unmapped.
    struct iovec v[2] = {{p, 100}, {ro, 100}};
    show("preadv second read-only", preadv(file, v, 2, 0));
    char *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(gone, 4096);
    v[1].iov_base = gone;
    show("preadv second unmapped", preadv(file, v, 2, 0));
    v[0].iov_base = gone;
    show("preadv first unmapped", preadv(file, v, 2, 0));
    show("mprotect writable again", mprotect(p + 4096, 2 * 4096, PROT_READ | PROT_WRITE));
    show("pread into it again", pread(file, p + 8192, 16, 0));
    printf("page 0 holds: %.9s\n", p);
    unlink(path);
    return 0;
}
