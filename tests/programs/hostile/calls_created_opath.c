/* fcntl(F_CREATED_QUERY) (Linux 6.12) tells whether the descriptor's open created its file;
 * socket calls on an O_PATH descriptor are EBADF (Linux does not look behind it), on another
 * file ENOTSOCK. Under hrt F_CREATED_QUERY was EINVAL and the O_PATH ones ENOTSOCK. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef F_CREATED_QUERY
#define F_CREATED_QUERY 1028
#endif

static const char *res(long r) { return r < 0 ? strerror(errno) : "ok"; }

int main(void) {
    char path[] = "/tmp/hrt-created-XXXXXX";
    int tmp = mkstemp(path);
    close(tmp);
    unlink(path);
    int made = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    int again = open(path, O_RDWR | O_CREAT, 0600);
    printf("created by its open: %d, opened again: %d\n", fcntl(made, F_CREATED_QUERY, 0), fcntl(again, F_CREATED_QUERY, 0));
    int opath = open(path, O_PATH);
    struct sockaddr sa;
    socklen_t len = sizeof sa;
    int v;
    socklen_t vl = sizeof v;
    printf("accept on O_PATH: %s\n", res(accept(opath, &sa, &len)));
    printf("getsockopt on O_PATH: %s\n", res(getsockopt(opath, SOL_SOCKET, SO_TYPE, &v, &vl)));
    printf("listen on O_PATH: %s\n", res(listen(opath, 1)));
    printf("accept on a file: %s\n", res(accept(made, &sa, &len)));
    printf("shutdown on a file: %s\n", res(shutdown(made, SHUT_RD)));
    unlink(path);
    return 0;
}
