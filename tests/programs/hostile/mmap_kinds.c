// mmap of every kind of descriptor, private and shared, read-only: what Linux's checks answer
// (EBADF, EACCES for one not open for reading, ENODEV for a file without mappable pages) and,
// where it maps, the first byte.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

static void try_both(const char *what, int fd) {
    for (int shared = 0; shared < 2; shared++) {
        char *p = mmap(NULL, 4096, PROT_READ, shared ? MAP_SHARED : MAP_PRIVATE, fd, 0);
        printf("%-14s %-7s %s", what, shared ? "shared" : "private", p == MAP_FAILED ? strerror(errno) : "maps");
        if (p != MAP_FAILED)
            printf(", first byte %d", p[0]);
        printf("\n");
    }
}

int main(void) {
    int p[2];
    pipe(p);
    write(p[1], "x", 1);
    try_both("pipe", p[0]);
    int s[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, s);
    try_both("socket", s[0]);
    try_both("eventfd", eventfd(0, 0));
    try_both("epoll", epoll_create1(0));
    try_both("/dev/zero", open("/dev/zero", O_RDONLY));
    try_both("/dev/null", open("/dev/null", O_RDONLY));
    try_both("/dev/urandom", open("/dev/urandom", O_RDONLY));
    try_both("directory", open("/etc", O_RDONLY | O_DIRECTORY));
    try_both("/proc file", open("/proc/self/status", O_RDONLY));
    try_both("O_PATH", open("/etc/passwd", O_PATH));
    char name[] = "/tmp/hrt-mmap-kinds-XXXXXX";
    int f = mkstemp(name);
    write(f, "hello", 5);
    try_both("file", f);
    try_both("file, O_WRONLY", open(name, O_WRONLY));
    try_both("file, O_RDWR", open(name, O_RDWR));
    unlink(name);
    try_both("not open", 999);
    printf("mmap kinds: done\n");
    return 0;
}
