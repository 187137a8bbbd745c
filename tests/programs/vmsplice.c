/* vmsplice(2) as on Linux: gathered buffers into a pipe's write end, a pipe's bytes scattered
 * into buffers from its read end, SPLICE_F_NONBLOCK on an empty or full pipe (EAGAIN), and a
 * descriptor that is no pipe (EBADF); then a pipe a splice from a file has filled (Linux 6.x
 * then refuses RWF_NOWAIT on it, which vmsplice must not show): nonblocking out of it and into
 * it, empty and full. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static void result(const char *what, ssize_t r) {
    if (r < 0)
        printf("%s: -1 %s\n", what, strerror(errno));
    else
        printf("%s: %zd\n", what, r);
}

int main(void) {
    int p[2];
    if (pipe(p) != 0)
        return 1;
    struct iovec out[2] = {{"hello ", 6}, {"pipe", 4}};
    result("into the write end", vmsplice(p[1], out, 2, 0));
    char a[4] = {0}, b[7] = {0};
    struct iovec in[2] = {{a, 3}, {b, 6}};
    ssize_t n = vmsplice(p[0], in, 2, 0);
    result("out of the read end", n);
    printf("bytes: '%.3s' '%.*s'\n", a, (int)(n > 3 ? n - 3 : 0), b);
    result("nonblocking, the byte left", vmsplice(p[0], in, 1, SPLICE_F_NONBLOCK));
    result("nonblocking, empty", vmsplice(p[0], in, 1, SPLICE_F_NONBLOCK));
    fcntl(p[1], F_SETPIPE_SZ, 4096);
    /* Page-aligned: Linux fills a pipe slot per page piece, so an unaligned buffer fills the
     * one-page pipe with less than a page. */
    static char big[8192] __attribute__((aligned(4096)));
    struct iovec fill = {big, sizeof big};
    result("nonblocking into a small pipe", vmsplice(p[1], &fill, 1, SPLICE_F_NONBLOCK));
    result("nonblocking into the full pipe", vmsplice(p[1], &fill, 1, SPLICE_F_NONBLOCK));
    int f = open("/proc/self/exe", O_RDONLY);
    result("a regular file", vmsplice(f, in, 1, 0));

    int q[2];
    if (pipe(q) != 0)
        return 1;
    loff_t off = 0;
    result("splice from the file into a new pipe", splice(f, &off, q[1], NULL, 4096, 0));
    char elf[4096];
    struct iovec head = {elf, sizeof elf};
    ssize_t got = vmsplice(q[0], &head, 1, SPLICE_F_NONBLOCK);
    result("nonblocking out of the spliced pipe", got);
    printf("ELF magic: %d\n", got >= 4 && memcmp(elf, "\177ELF", 4) == 0);
    result("nonblocking out of it, empty", vmsplice(q[0], &head, 1, SPLICE_F_NONBLOCK));
    result("nonblocking into it", vmsplice(q[1], out, 2, SPLICE_F_NONBLOCK));
    result("blocking out of it", vmsplice(q[0], in, 2, 0));
    printf("bytes: '%.3s' '%.6s'\n", a, b);
    fcntl(q[1], F_SETPIPE_SZ, 4096);
    result("nonblocking into it, small", vmsplice(q[1], &fill, 1, SPLICE_F_NONBLOCK));
    result("nonblocking into it, full", vmsplice(q[1], &fill, 1, SPLICE_F_NONBLOCK));
    return 0;
}
