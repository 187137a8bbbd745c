// Which error wins when both a descriptor and another argument are bad: Linux checks some
// arguments before it looks the descriptor up. ftruncate's negative length (EINVAL), a splice
// of 0 bytes (0, before any descriptor), timerfd_settime's bad value (EINVAL) and sendfile's
// input that cannot take an offset (ESPIPE, before the output's EBADF); hrt looked the
// descriptor up first (EBADF each).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/timerfd.h>
#include <unistd.h>

static void said(const char *what, long r) {
    printf("%-40s %ld %s\n", what, r, r < 0 ? strerror(errno) : "");
}

int main(void) {
    said("ftruncate(closed, -1)", ftruncate(1000, -1));
    said("splice(closed, closed, 0 bytes)", splice(1000, 0, 1001, 0, 0, 0));
    said("splice(closed, closed, 1 byte)", splice(1000, 0, 1001, 0, 1, 0));
    struct itimerspec t = {{0, 0}, {0, 1000000000}};
    said("timerfd_settime(closed, bad value)", timerfd_settime(1000, 0, &t, 0));
    said("timerfd_settime(closed, bad flags)", timerfd_settime(1000, 0x100, &t, 0));
    t.it_value.tv_nsec = 1;
    said("timerfd_settime(closed, good value)", timerfd_settime(1000, 0, &t, 0));
    int p[2];
    if (pipe(p))
        return 1;
    off_t off = 0;
    said("sendfile(closed out, pipe in, offset)", sendfile(1000, p[0], &off, 1));
    said("sendfile(closed out, pipe in)", sendfile(1000, p[0], 0, 1));
    said("sendfile(pipe out, closed in)", sendfile(p[1], 1000, 0, 1));
    printf("bad fd and argument: done\n");
    return 0;
}
