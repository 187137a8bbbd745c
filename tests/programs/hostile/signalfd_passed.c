// A signalfd passed through an SCM_RIGHTS message to the same process stays a signalfd: the
// received descriptor reads signalfd_siginfo records (not the 8 bytes of an eventfd), polls
// readable once a signal of its mask is pending, shares the mask with the original (a new mask
// set through either), and outlives the original's close; with recvmsg and recvmmsg, beside a
// pipe in the same message. A plain eventfd passed the same way stays an eventfd. Compared with
// the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define SHOW_WIDTH 44
#include "show.h"
#include "signalfd_read.h"

static int sp[2];

// Sends `n` descriptors in one message.
static void pass(const int *fds, int n) {
    char c = 'F';
    struct iovec iv = {&c, 1};
    char cb[CMSG_SPACE(2 * sizeof(int))];
    memset(cb, 0, sizeof cb);
    struct msghdr m = {.msg_iov = &iv, .msg_iovlen = 1, .msg_control = cb, .msg_controllen = CMSG_SPACE(n * sizeof(int))};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(n * sizeof(int));
    memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
    if (sendmsg(sp[0], &m, 0) != 1)
        perror("sendmsg");
}

// Receives one message's descriptors into `out` (recvmmsg if `many`); their number.
static int receive(int *out, int many) {
    char c;
    struct iovec iv = {&c, 1};
    char cb[CMSG_SPACE(2 * sizeof(int))];
    struct mmsghdr mm;
    memset(&mm, 0, sizeof mm);
    mm.msg_hdr = (struct msghdr){.msg_iov = &iv, .msg_iovlen = 1, .msg_control = cb, .msg_controllen = sizeof cb};
    int r = many ? recvmmsg(sp[1], &mm, 1, 0, NULL) : (recvmsg(sp[1], &mm.msg_hdr, 0) == 1 ? 1 : -1);
    if (r != 1) {
        perror("receive");
        return 0;
    }
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mm.msg_hdr);
    int n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    memcpy(out, CMSG_DATA(cm), n * sizeof(int));
    return n;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    sigset_t both, usr2;
    sigemptyset(&both);
    sigaddset(&both, SIGUSR1);
    sigaddset(&both, SIGUSR2);
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    sigprocmask(SIG_BLOCK, &both, NULL);
    socketpair(AF_UNIX, SOCK_STREAM, 0, sp);

    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    int sf = signalfd(-1, &usr1, SFD_NONBLOCK);
    pass(&sf, 1);
    int got[2];
    receive(got, 0);
    show("received: readable, none pending", readable(got[0], 0));
    take("received: read, none pending", got[0]);
    kill(getpid(), SIGUSR1);
    show("received: readable after kill", readable(got[0], 0));
    show("original: readable after kill", readable(sf, 0));
    take("received: read", got[0]);
    show("original: readable after that", readable(sf, 0));

    // The mask is the object's: set through the received one, seen through both.
    show("new mask through the received one", signalfd(got[0], &usr2, 0) == got[0]);
    raise(SIGUSR1);
    show("original: SIGUSR1 now outside", readable(sf, 0));
    raise(SIGUSR2);
    take("original: read", sf);
    take("received: read, SIGUSR1 outside", got[0]);
    sigset_t pend;
    sigpending(&pend);
    printf("%-*s %d\n", SHOW_WIDTH, "SIGUSR1 still pending", sigismember(&pend, SIGUSR1));
    signalfd(sf, &both, 0);
    take("original: read SIGUSR1", sf);

    // The original closed: the received one goes on.
    close(sf);
    raise(SIGUSR2);
    take("received after the original's close", got[0]);

    // With recvmmsg, beside a pipe in the same message.
    int p[2];
    pipe(p);
    int two[2] = {got[0], p[1]};
    pass(two, 2);
    int again[2];
    show("recvmmsg: descriptors", receive(again, 1));
    raise(SIGUSR1);
    take("recvmmsg: the signalfd", again[0]);
    show("recvmmsg: the pipe writes", write(again[1], "x", 1));
    char c;
    show("and the pipe reads it", read(p[0], &c, 1));

    // A plain eventfd stays one.
    int ev = eventfd(5, EFD_NONBLOCK);
    pass(&ev, 1);
    int evr[2];
    receive(evr, 0);
    uint64_t v = 0;
    ssize_t n = read(evr[0], &v, sizeof v);
    printf("%-*s %zd bytes, value %llu\n", SHOW_WIDTH, "received eventfd: read", n, (unsigned long long)v);
    return 0;
}
