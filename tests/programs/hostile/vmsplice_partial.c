/* vmsplice of more than a pipe holds: Linux waits for room once and hands over what fits (a
 * partial count), as LTP's vmsplice01 relies on (it reads only after each vmsplice returns);
 * on a full pipe SPLICE_F_NONBLOCK is EAGAIN. Under hrt the vmsplice waited until all of it
 * was written, for good. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static char data[256 << 10], back[256 << 10];

int main(void) {
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (char)(i * 7 + 1);
    int p[2];
    if (pipe(p) != 0)
        return 1;
    size_t done = 0;
    int rounds = 0;
    while (done < sizeof data) {
        struct pollfd pfd = {.fd = p[1], .events = POLLOUT};
        poll(&pfd, 1, -1);
        struct iovec v = {data + done, sizeof data - done};
        ssize_t n = vmsplice(p[1], &v, 1, 0);
        if (n <= 0) {
            printf("vmsplice: %s\n", strerror(errno));
            return 1;
        }
        if (rounds == 0) {
            struct iovec one = {data, 4096};
            ssize_t again = vmsplice(p[1], &one, 1, SPLICE_F_NONBLOCK);
            printf("first vmsplice: %s of %zu bytes; on the full pipe, non-blocking: %s\n",
                   (size_t)n < sizeof data ? "part" : "all", sizeof data, again < 0 ? strerror(errno) : "wrote");
        }
        for (ssize_t got = 0; got < n;) {
            ssize_t r = read(p[0], back + done + got, n - got);
            if (r <= 0)
                return 1;
            got += r;
        }
        done += n;
        rounds++;
    }
    printf("all %zu bytes through the pipe in more than one vmsplice: %d, same bytes: %d\n", sizeof data, rounds > 1,
           memcmp(data, back, sizeof data) == 0);
    return 0;
}
