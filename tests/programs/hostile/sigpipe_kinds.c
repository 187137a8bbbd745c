// Which EPIPE failures raise SIGPIPE (blocked, then looked for with sigpending): a write, send or
// sendmsg on a stream socket whose peer shut down does (not with MSG_NOSIGNAL), on a
// sequenced-packet or datagram socket it does not (Linux's unix_dgram_sendmsg sends none:
// under hrt it did); a pipe without readers does for write, vmsplice (it did not under hrt),
// splice and tee.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

static int sigpipe_taken(void) {
    sigset_t s, w;
    sigpending(&s);
    if (!sigismember(&s, SIGPIPE))
        return 0;
    int sig;
    sigemptyset(&w);
    sigaddset(&w, SIGPIPE);
    sigwait(&w, &sig);
    return 1;
}

static void show(const char *what, long r) {
    int e = errno;
    printf("%-28s %ld %s sigpipe %d\n", what, r, r < 0 ? strerror(e) : "", sigpipe_taken());
}

int main(void) {
    sigset_t b;
    sigemptyset(&b);
    sigaddset(&b, SIGPIPE);
    sigprocmask(SIG_BLOCK, &b, 0);
    const char *names[] = {"stream", "seqpacket", "dgram"};
    int types[] = {SOCK_STREAM, SOCK_SEQPACKET, SOCK_DGRAM};
    char line[64];
    for (int i = 0; i < 3; i++) {
        for (int how = 0; how < 2; how++) {
            int sv[2];
            if (socketpair(AF_UNIX, types[i], 0, sv))
                return 1;
            if (how)
                close(sv[1]);
            else
                shutdown(sv[0], SHUT_WR);
            const char *end = how ? "peer closed" : "shut down";
            snprintf(line, sizeof line, "%s %s write", names[i], end);
            show(line, write(sv[0], "x", 1));
            snprintf(line, sizeof line, "%s %s send", names[i], end);
            show(line, send(sv[0], "x", 1, 0));
            snprintf(line, sizeof line, "%s %s nosignal", names[i], end);
            show(line, send(sv[0], "x", 1, MSG_NOSIGNAL));
            struct iovec v = {"x", 1};
            struct msghdr m = {.msg_iov = &v, .msg_iovlen = 1};
            snprintf(line, sizeof line, "%s %s sendmsg", names[i], end);
            show(line, sendmsg(sv[0], &m, 0));
            close(sv[0]);
            if (!how)
                close(sv[1]);
        }
    }
    int p[2], q[2];
    if (pipe(p) || pipe(q))
        return 1;
    close(p[0]);
    show("pipe write", write(p[1], "x", 1));
    struct iovec v = {"x", 1};
    show("pipe vmsplice", vmsplice(p[1], &v, 1, 0));
    if (write(q[1], "xy", 2) != 2)
        return 1;
    show("pipe splice", splice(q[0], 0, p[1], 0, 1, 0));
    show("pipe tee", tee(q[0], p[1], 1, 0));
    printf("sigpipe kinds: done\n");
    return 0;
}
