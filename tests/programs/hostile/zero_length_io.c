// Zero-length reads and buffers, as Linux answers them: an eventfd's and a timerfd's read of 0
// bytes is EINVAL (hrt's non-waiting try answered 0 without asking the file), and so is an
// eventfd writev whose first buffer is empty (hrt dropped empty buffers); pipes and files take
// 0 bytes, and an empty buffer before a bad one still faults.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <unistd.h>

static void said(const char *what, long r) {
    printf("%-32s %ld %s\n", what, r, r < 0 ? strerror(errno) : "");
}

int main(void) {
    char b[16];
    int e = eventfd(1, EFD_NONBLOCK);
    int t = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    int p[2];
    if (e < 0 || t < 0 || pipe2(p, O_NONBLOCK))
        return 1;
    said("eventfd read 0", read(e, b, 0));
    said("timerfd read 0", read(t, b, 0));
    said("eventfd read 4", read(e, b, 4));
    uint64_t one = 1;
    struct iovec v[2] = {{b, 0}, {&one, 8}};
    said("eventfd writev empty then 8", writev(e, v, 2));
    said("eventfd writev 8", writev(e, v + 1, 1));
    said("eventfd read 8", read(e, b, 8));
    said("pipe write 0", write(p[1], b, 0));
    said("pipe read 0", read(p[0], b, 0));
    said("pipe writev empty then 8", writev(p[1], v, 2));
    struct iovec bad[2] = {{b, 0}, {(void *)8, 8}};
    said("pipe readv empty then bad", readv(p[0], bad, 2));
    int f = open("/proc/self/exe", O_RDONLY);
    said("file readv empty then bad", readv(f, bad, 2));
    printf("zero length io: done\n");
    return 0;
}
