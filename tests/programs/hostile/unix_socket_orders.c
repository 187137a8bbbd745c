// AF_UNIX calls a differential fuzzer found different (stop 100): a send or connect to a
// pathname that is not there was ENOENT before the socket's own checks (a connected
// sequenced-packet socket ignores the address and sends; a stream socket says EISCONN or
// EOPNOTSUPP; a shut-down one EPIPE; SO_PASSCRED autobinds first); a sequenced-packet
// sendmsg with a descriptor the program lacks was EBADF before ENOTCONN and the socket's
// pending error; recvmmsg read queued data before answering a pending error (ECONNRESET);
// an epoll instance received in an SCM_RIGHTS message could not be waited on (EINVAL).
// Works in a fresh directory under /tmp.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "scratch.h"

static void said(const char *what, int type, long r) {
    printf("%-28s type %d: %ld %s\n", what, type, r, r < 0 ? strerror(errno) : "");
}

static long send_fd(int s, int fd) {
    char cb[CMSG_SPACE(sizeof(int))];
    memset(cb, 0, sizeof cb);
    struct iovec iv = {"x", 1};
    struct msghdr m = {0};
    m.msg_iov = &iv;
    m.msg_iovlen = 1;
    m.msg_control = cb;
    m.msg_controllen = sizeof cb;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    return sendmsg(s, &m, MSG_NOSIGNAL);
}

static int receive_fd(int s) {
    char cb[CMSG_SPACE(sizeof(int))], d[4];
    struct iovec iv = {d, sizeof d};
    struct msghdr m = {0};
    m.msg_iov = &iv;
    m.msg_iovlen = 1;
    m.msg_control = cb;
    m.msg_controllen = sizeof cb;
    if (recvmsg(s, &m, 0) < 0 || !CMSG_FIRSTHDR(&m))
        return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof fd);
    return fd;
}

int main(void) {
    char dir[] = "/tmp/hrt-unix-orders-XXXXXX";
    if (enter_scratch(dir))
        return 1;
    struct sockaddr_un missing = {AF_UNIX, "no_such_socket"};
    int types[] = {SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM};
    for (int t = 0; t < 3; t++) {
        int sv[2];
        socketpair(AF_UNIX, types[t] | SOCK_NONBLOCK, 0, sv);
        said("sendto missing, connected", types[t], sendto(sv[0], "abc", 3, MSG_NOSIGNAL, (void *)&missing, sizeof missing));
        shutdown(sv[0], SHUT_WR);
        said("sendto missing, shut down", types[t], sendto(sv[0], "abc", 3, MSG_NOSIGNAL, (void *)&missing, sizeof missing));
        int s = socket(AF_UNIX, types[t], 0);
        said("sendto missing, unconnected", types[t], sendto(s, "abc", 3, MSG_NOSIGNAL, (void *)&missing, sizeof missing));
        int p = socket(AF_UNIX, types[t], 0), one = 1;
        setsockopt(p, SOL_SOCKET, SO_PASSCRED, &one, sizeof one);
        long r = types[t] == SOCK_DGRAM ? sendto(p, "x", 1, 0, (void *)&missing, sizeof missing)
                                        : connect(p, (void *)&missing, sizeof missing);
        said("SO_PASSCRED, missing peer", types[t], r);
        struct sockaddr_un got;
        socklen_t len = sizeof got;
        getsockname(p, (void *)&got, &len);
        printf("  autobound: %d\n", len > 2);
        close(sv[0]), close(sv[1]), close(s), close(p);
    }
    int s = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    said("seqpacket unconnected, fd 999", SOCK_SEQPACKET, send_fd(s, 999));
    int sv[2];
    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv);
    if (write(sv[0], "q", 1) != 1)
        return 1;
    close(sv[1]);
    said("seqpacket peer gone, fd 999", SOCK_SEQPACKET, send_fd(sv[0], 999));
    said("seqpacket peer gone, fd 0", SOCK_SEQPACKET, send_fd(sv[0], 0));
    close(sv[0]);

    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    if (write(sv[0], "x", 1) != 1 || write(sv[1], "hello", 5) != 5)
        return 1;
    close(sv[1]);
    char b[2][8];
    struct iovec iv[2] = {{b[0], 8}, {b[1], 8}};
    struct mmsghdr mm[2];
    memset(mm, 0, sizeof mm);
    for (int i = 0; i < 2; i++)
        mm[i].msg_hdr.msg_iov = &iv[i], mm[i].msg_hdr.msg_iovlen = 1;
    for (int k = 0; k < 3; k++) {
        long r = recvmmsg(sv[0], mm, 2, MSG_DONTWAIT, NULL);
        said("recvmmsg, peer reset", SOCK_STREAM, r);
        if (r > 0)
            printf("  first length %u\n", mm[0].msg_len);
    }
    close(sv[0]);

    socketpair(AF_UNIX, SOCK_DGRAM, 0, sv);
    int ep = epoll_create1(0), efd = eventfd(1, 0);
    struct epoll_event ev = {EPOLLIN, {.u64 = 42}};
    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &ev);
    said("send an epoll instance", SOCK_DGRAM, send_fd(sv[0], ep));
    int ep2 = receive_fd(sv[1]);
    printf("received: %d\n", ep2 >= 0 && ep2 != ep);
    ev.data.u64 = 0;
    long r = epoll_wait(ep2, &ev, 1, 0);
    said("epoll_wait on it", SOCK_DGRAM, r);
    printf("  data %llu\n", r > 0 ? (unsigned long long)ev.data.u64 : 0ULL);
    close(ep);
    said("epoll_wait, first one closed", SOCK_DGRAM, epoll_wait(ep2, &ev, 1, 0));
    if (chdir("/") || rmdir(dir))
        printf("left behind\n");
    printf("unix socket orders: done\n");
    return 0;
}
