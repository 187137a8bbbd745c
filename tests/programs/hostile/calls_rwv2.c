// preadv2 and pwritev2: at an offset and at the descriptor's own position (-1), RWF_APPEND,
// RWF_NOWAIT on an empty pipe (EAGAIN), unknown flags, bad iovecs and descriptors. Compared
// with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static void show(const char *what, long r) {
    if (r >= 0)
        printf("%-40s %ld\n", what, r);
    else
        printf("%-40s %s\n", what, strerror(errno));
}

int main(void) {
    char path[] = "/tmp/hrt-rwv2-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    char a[] = "hello ", b[] = "world";
    struct iovec w[2] = {{a, 6}, {b, 5}};
    show("pwritev2 at 0", pwritev2(fd, w, 2, 0, 0));
    show("pwritev2 at own position", pwritev2(fd, w, 1, -1, 0));
    show("pwritev2 RWF_APPEND", pwritev2(fd, w + 1, 1, 0, RWF_APPEND));
    char r1[8] = {0}, r2[16] = {0};
    struct iovec r[2] = {{r1, 3}, {r2, sizeof r2 - 1}};
    show("preadv2 at 0", preadv2(fd, r, 2, 0, 0));
    printf("  read: [%s] [%s]\n", r1, r2);
    lseek(fd, 6, SEEK_SET);
    memset(r2, 0, sizeof r2);
    struct iovec one = {r2, 5};
    show("preadv2 at own position", preadv2(fd, &one, 1, -1, 0));
    printf("  read: [%s], position now %ld\n", r2, (long)lseek(fd, 0, SEEK_CUR));
    show("preadv2 RWF_HIPRI|RWF_SYNC-like flags", preadv2(fd, &one, 1, 0, RWF_DSYNC));
    show("preadv2 unknown flag", preadv2(fd, &one, 1, 0, 0x40000000));
    struct iovec bad = {(void *)8, 4};
    show("preadv2 bad buffer", preadv2(fd, &bad, 1, 0, 0));
    show("pwritev2 bad iovec array", pwritev2(fd, (void *)8, 1, 0, 0));
    show("preadv2 bad descriptor", preadv2(999, &one, 1, 0, 0));
    int p[2];
    pipe(p);
    show("preadv2 RWF_NOWAIT on an empty pipe", preadv2(p[0], &one, 1, -1, RWF_NOWAIT));
    write(p[1], "xy", 2);
    show("preadv2 RWF_NOWAIT with data", preadv2(p[0], &one, 1, -1, RWF_NOWAIT));
    show("preadv2 at an offset on a pipe", preadv2(p[0], &one, 1, 0, 0));
    unlink(path);
    return 0;
}
