/* fcntl(F_CREATED_QUERY) (Linux 6.12) tells whether the descriptor's open created its file;
 * socket calls and ioctl on an O_PATH descriptor are EBADF (Linux does not look behind it), on
 * another file ENOTSOCK and ENOTTY; mmap of a file descriptor that is not open is EBADF before
 * its length is looked at. Under hrt F_CREATED_QUERY was EINVAL, the O_PATH socket calls
 * ENOTSOCK, its ioctls ENOTTY, and the mmap EINVAL (LTP's fcntl40, accept03, open13, mmap08). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <termios.h>
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
    struct termios tio;
    printf("ioctl TCGETS on O_PATH: %s\n", res(ioctl(opath, TCGETS, &tio)));
    printf("ioctl FIOCLEX on O_PATH: %s\n", res(ioctl(opath, FIOCLEX)));
    printf("ioctl TCGETS on a file: %s\n", res(ioctl(made, TCGETS, &tio)));
    printf("mmap of length 0 of a closed descriptor: %s\n", res((long)mmap(0, 0, PROT_WRITE, MAP_SHARED, -1, 0)));
    printf("mmap of length 0 of an open one: %s\n", res((long)mmap(0, 0, PROT_WRITE, MAP_SHARED, made, 0)));
    unlink(path);
    return 0;
}
