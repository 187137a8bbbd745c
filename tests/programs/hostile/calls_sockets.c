// Sockets as Linux has them: a TCP echo server and client in two threads on loopback, UDP
// sendto/recvfrom and sendmmsg/recvmmsg, an AF_UNIX socketpair passing a pipe and a file with
// SCM_RIGHTS (with and without MSG_CMSG_CLOEXEC), AF_UNIX names relative to the working
// directory, getsockname/getpeername, socket options, bad pointers (EFAULT), bad descriptors
// (EBADF, ENOTSOCK), SIGPIPE from send, accept interrupted by a signal (EINTR; restarted under
// SA_RESTART; a read with SO_RCVTIMEO never restarted), epoll over several connections, read/write/readv/poll on sockets. Port 0 and
// getsockname everywhere, so runs never collide. One line per case; the same natively and
// under hrt.
//
// `calls_sockets server`: listens on 127.0.0.1 port 0, prints the port, answers one line
// upper-cased to one client, exits (a native peer talks to it). `calls_sockets proc`: AF_UNIX
// names inside hrt's own /proc (refused under hrt).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "handler.h"
#include "report.h"

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

// A TCP socket listening on 127.0.0.1, port chosen by the kernel; its port in *port.
static int tcp_listener(int *port) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 16) < 0)
        return -1;
    socklen_t len = sizeof a;
    getsockname(s, (struct sockaddr *)&a, &len);
    *port = ntohs(a.sin_port);
    return s;
}

static int tcp_connect(int port) {
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(c, (struct sockaddr *)&a, sizeof a) < 0)
        return -1;
    return c;
}

// Reads exactly n bytes (a stream may deliver them in pieces).
static long read_all(int fd, char *buf, long n) {
    long got = 0;
    while (got < n) {
        long r = read(fd, buf + got, n - got);
        if (r <= 0)
            return r < 0 ? r : got;
        got += r;
    }
    return got;
}

static void *echo_server(void *arg) {
    int l = *(int *)arg;
    struct sockaddr_in peer;
    socklen_t len = sizeof peer;
    int c = accept(l, (struct sockaddr *)&peer, &len);
    if (c < 0)
        return (void *)-1L;
    char buf[4096];
    long total = 0, r;
    while ((r = recv(c, buf, sizeof buf, 0)) > 0) {
        send(c, buf, r, 0);
        total += r;
    }
    close(c);
    return (void *)total;
}

static void tcp_echo(void) {
    int port;
    int l = tcp_listener(&port);
    report("tcp listen", l >= 0 ? 0 : -1);
    pthread_t t;
    pthread_create(&t, NULL, echo_server, &l);
    int c = tcp_connect(port);
    report("tcp connect", c >= 0 ? 0 : -1);
    static char out[100000], in[100000];
    for (int i = 0; i < (int)sizeof out; i++)
        out[i] = (char)(i * 7 + 3);
    // The client writes in pieces while the server echoes: more than a socket buffer's worth
    // needs both sides running.
    long sent = 0;
    long got = 0;
    while (sent < (long)sizeof out) {
        long n = send(c, out + sent, 10000, 0);
        if (n <= 0)
            break;
        sent += n;
        long r = read_all(c, in + got, n);
        if (r <= 0)
            break;
        got += r;
    }
    report("tcp echo sent", sent);
    report("tcp echo received", got);
    printf("tcp echo same: %d\n", memcmp(out, in, sizeof out) == 0);
    struct sockaddr_in me, peer;
    socklen_t ml = sizeof me, pl = sizeof peer;
    getsockname(c, (struct sockaddr *)&me, &ml);
    getpeername(c, (struct sockaddr *)&peer, &pl);
    printf("tcp names: len %u %u family %d %d peer port is server's %d addr loopback %d\n", ml, pl, me.sin_family,
           peer.sin_family, ntohs(peer.sin_port) == port, ntohl(peer.sin_addr.s_addr) == INADDR_LOOPBACK);
    shutdown(c, SHUT_WR);
    void *total;
    pthread_join(t, &total);
    report("tcp server total", (long)total);
    char b;
    report("tcp read after server closed", read(c, &b, 1));
    report("tcp getpeername on listener", getpeername(l, (struct sockaddr *)&peer, &pl));
    close(c);
    close(l);
}

static void udp(void) {
    int a = socket(AF_INET, SOCK_DGRAM, 0), b = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    struct sockaddr_in sb = sa;
    bind(a, (struct sockaddr *)&sa, sizeof sa);
    bind(b, (struct sockaddr *)&sb, sizeof sb);
    socklen_t len = sizeof sa;
    getsockname(a, (struct sockaddr *)&sa, &len);
    len = sizeof sb;
    getsockname(b, (struct sockaddr *)&sb, &len);
    report("udp sendto", sendto(a, "datagram", 8, 0, (struct sockaddr *)&sb, sizeof sb));
    char buf[64] = {0};
    struct sockaddr_in from;
    socklen_t fl = sizeof from;
    report("udp recvfrom", recvfrom(b, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl));
    printf("udp from: len %u sender's port %d text %s\n", fl, from.sin_port == sa.sin_port, buf);
    // A short address buffer: the address cut, the full length reported.
    sendto(a, "x", 1, 0, (struct sockaddr *)&sb, sizeof sb);
    fl = 4;
    memset(&from, 0, sizeof from);
    report("udp recvfrom short addr", recvfrom(b, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl));
    printf("udp short addr: len %u port copied %d\n", fl, from.sin_port == sa.sin_port);
    // Truncated datagram.
    sendto(a, "0123456789", 10, 0, (struct sockaddr *)&sb, sizeof sb);
    report("udp recv truncated", recv(b, buf, 4, 0));
    sendto(a, "0123456789", 10, 0, (struct sockaddr *)&sb, sizeof sb);
    report("udp recv MSG_TRUNC", recv(b, buf, 4, MSG_TRUNC));
    report("udp recv nothing (DONTWAIT)", recv(b, buf, 4, MSG_DONTWAIT));
    // sendmmsg / recvmmsg.
    connect(a, (struct sockaddr *)&sb, sizeof sb);
    struct mmsghdr m[3];
    struct iovec iov[3];
    char *texts[3] = {"one", "three", "seventeen"};
    memset(m, 0, sizeof m);
    for (int i = 0; i < 3; i++) {
        iov[i].iov_base = texts[i];
        iov[i].iov_len = strlen(texts[i]);
        m[i].msg_hdr.msg_iov = &iov[i];
        m[i].msg_hdr.msg_iovlen = 1;
    }
    report("sendmmsg", sendmmsg(a, m, 3, 0));
    printf("sendmmsg lens: %u %u %u\n", m[0].msg_len, m[1].msg_len, m[2].msg_len);
    char rb[3][32];
    struct sockaddr_in rfrom[3];
    memset(m, 0, sizeof m);
    for (int i = 0; i < 3; i++) {
        iov[i].iov_base = rb[i];
        iov[i].iov_len = sizeof rb[i];
        m[i].msg_hdr.msg_iov = &iov[i];
        m[i].msg_hdr.msg_iovlen = 1;
        m[i].msg_hdr.msg_name = &rfrom[i];
        m[i].msg_hdr.msg_namelen = sizeof rfrom[i];
    }
    report("recvmmsg", recvmmsg(b, m, 3, 0, NULL));
    printf("recvmmsg lens: %u %u %u namelen %u\n", m[0].msg_len, m[1].msg_len, m[2].msg_len, m[0].msg_hdr.msg_namelen);
    report("recvmmsg none (DONTWAIT)", recvmmsg(b, m, 3, MSG_DONTWAIT, NULL));
    close(a);
    close(b);
}

// Sends `fds` (n of them) with one byte over `s`.
static long send_fds(int s, int *fds, int n) {
    char byte = 'F';
    struct iovec iov = {&byte, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = CMSG_SPACE(sizeof(int) * n)};
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * n);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
    return sendmsg(s, &m, 0);
}

// Receives descriptors into fds (up to 4); returns their number or -1.
static int recv_fds(int s, int *fds, int flags, int *msg_flags) {
    char byte;
    struct iovec iov = {&byte, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int) * 4)];
        struct cmsghdr align;
    } u;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    if (recvmsg(s, &m, flags) < 0)
        return -1;
    *msg_flags = m.msg_flags;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c || c->cmsg_type != SCM_RIGHTS)
        return 0;
    int n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    memcpy(fds, CMSG_DATA(c), sizeof(int) * n);
    return n;
}

static void unix_rights(void) {
    int sv[2];
    report("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
    int p[2];
    pipe(p);
    char name[] = "/tmp/hrt-sockets-XXXXXX";
    int file = mkstemp(name);
    unlink(name);
    write(file, "file contents", 13);
    int give[2] = {p[0], file};
    report("sendmsg SCM_RIGHTS", send_fds(sv[0], give, 2));
    int got[4], mflags;
    int n = recv_fds(sv[1], got, 0, &mflags);
    report("recvmsg SCM_RIGHTS count", n);
    printf("received fds are new: %d %d cloexec %d %d flags 0x%x\n", got[0] > file, got[1] > file,
           fcntl(got[0], F_GETFD), fcntl(got[1], F_GETFD), mflags);
    write(p[1], "through the pipe", 16);
    char buf[32] = {0};
    report("read received pipe", read(got[0], buf, sizeof buf - 1));
    printf("pipe text: %s\n", buf);
    memset(buf, 0, sizeof buf);
    report("pread received file", pread(got[1], buf, 13, 0));
    printf("file text: %s offset shared %d\n", buf, lseek(got[1], 0, SEEK_CUR) == lseek(file, 0, SEEK_CUR));
    close(got[0]);
    close(got[1]);
    // MSG_CMSG_CLOEXEC.
    send_fds(sv[0], give, 1);
    n = recv_fds(sv[1], got, MSG_CMSG_CLOEXEC, &mflags);
    report("recvmsg CLOEXEC count", n);
    report("received fd cloexec", fcntl(got[0], F_GETFD));
    close(got[0]);
    // A descriptor that is not open.
    int bad[1] = {999};
    report("sendmsg SCM_RIGHTS bad fd", send_fds(sv[0], bad, 1));
    // Control buffer too small for two descriptors: one arrives, MSG_CTRUNC.
    send_fds(sv[0], give, 2);
    {
        char byte;
        struct iovec iov = {&byte, 1};
        union {
            char buf[CMSG_SPACE(sizeof(int))];
            struct cmsghdr align;
        } u;
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = CMSG_LEN(sizeof(int))};
        report("recvmsg small control", recvmsg(sv[1], &m, 0));
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        int fd = -1;
        if (c)
            memcpy(&fd, CMSG_DATA(c), sizeof fd);
        printf("small control: ctrunc %d controllen %zu fd works %d\n", !!(m.msg_flags & MSG_CTRUNC), m.msg_controllen,
               fcntl(fd, F_GETFD) >= 0);
        close(fd);
    }
    // Plain data both ways, readv/writev and poll on the pair.
    struct iovec v[2] = {{"ab", 2}, {"cde", 3}};
    report("writev socket", writev(sv[0], v, 2));
    struct pollfd pf = {sv[1], POLLIN, 0};
    report("poll socket", poll(&pf, 1, 1000));
    printf("poll revents 0x%x\n", pf.revents);
    char x[3] = {0}, y[3] = {0};
    struct iovec r[2] = {{x, 2}, {y, 3}};
    report("readv socket", readv(sv[1], r, 2));
    printf("readv text: %.2s %.3s\n", x, y);
    // SIGPIPE: ignored -> EPIPE; MSG_NOSIGNAL -> EPIPE without the signal.
    close(sv[1]);
    signal(SIGPIPE, SIG_IGN);
    report("send to closed peer (SIGPIPE ignored)", send(sv[0], "x", 1, 0));
    report("send MSG_NOSIGNAL", send(sv[0], "x", 1, MSG_NOSIGNAL));
    close(sv[0]);
    close(p[0]);
    close(p[1]);
    close(file);
}

static void unix_names(void) {
    char dir[] = "/tmp/hrt-sockdir-XXXXXX";
    mkdtemp(dir);
    char old[4096];
    getcwd(old, sizeof old);
    chdir(dir);
    int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    report("unix socket cloexec", fcntl(l, F_GETFD));
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, "srv");
    report("unix bind relative", bind(l, (struct sockaddr *)&a, sizeof a));
    report("unix bind again", bind(socket(AF_UNIX, SOCK_STREAM, 0), (struct sockaddr *)&a, sizeof a));
    report("unix listen", listen(l, 4));
    struct stat st;
    stat("srv", &st);
    printf("unix socket file: %d\n", S_ISSOCK(st.st_mode));
    int c = socket(AF_UNIX, SOCK_STREAM, 0);
    report("unix connect relative", connect(c, (struct sockaddr *)&a, sizeof a));
    struct sockaddr_un peer;
    socklen_t pl = sizeof peer;
    int s = accept4(l, (struct sockaddr *)&peer, &pl, SOCK_CLOEXEC);
    report("unix accept4 cloexec", fcntl(s, F_GETFD));
    printf("unix accept peer len %u\n", pl);
    struct sockaddr_un me;
    socklen_t ml = sizeof me;
    getsockname(l, (struct sockaddr *)&me, &ml);
    printf("unix getsockname: len %u path %s\n", ml, me.sun_path);
    ml = sizeof me;
    getpeername(c, (struct sockaddr *)&me, &ml);
    printf("unix getpeername: len %u path %s\n", ml, me.sun_path);
    strcpy(a.sun_path, "missing");
    report("unix connect missing", connect(socket(AF_UNIX, SOCK_STREAM, 0), (struct sockaddr *)&a, sizeof a));
    strcpy(a.sun_path, "/");
    report("unix connect directory", connect(socket(AF_UNIX, SOCK_STREAM, 0), (struct sockaddr *)&a, sizeof a));
    // Datagrams to a name.
    int d = socket(AF_UNIX, SOCK_DGRAM, 0);
    strcpy(a.sun_path, "dg");
    bind(d, (struct sockaddr *)&a, sizeof a);
    int e = socket(AF_UNIX, SOCK_DGRAM, 0);
    report("unix sendto name", sendto(e, "hello", 5, 0, (struct sockaddr *)&a, sizeof a));
    char buf[8] = {0};
    struct sockaddr_un from;
    socklen_t fl = sizeof from;
    report("unix recvfrom", recvfrom(d, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl));
    printf("unix recvfrom: %s from len %u\n", buf, fl);
    // Abstract names.
    int ab = socket(AF_UNIX, SOCK_DGRAM, 0);
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "hrt-abstract-%d", getpid());
    socklen_t alen = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a.sun_path + 1);
    report("unix bind abstract", bind(ab, (struct sockaddr *)&a, alen));
    report("unix sendto abstract", sendto(e, "abs", 3, 0, (struct sockaddr *)&a, alen));
    report("unix recv abstract", recv(ab, buf, sizeof buf, 0));
    unlink("srv");
    unlink("dg");
    chdir(old);
    rmdir(dir);
    close(l);
    close(c);
    close(s);
    close(d);
    close(e);
    close(ab);
}

static void options(void) {
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1, v = 0;
    socklen_t len = sizeof v;
    report("setsockopt SO_REUSEADDR", setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one));
    report("getsockopt SO_REUSEADDR", getsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, &len));
    printf("SO_REUSEADDR: %d len %u\n", v, len);
    int size = 8192;
    report("setsockopt SO_RCVBUF", setsockopt(s, SOL_SOCKET, SO_RCVBUF, &size, sizeof size));
    len = sizeof v;
    getsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, &len);
    printf("SO_RCVBUF: %d\n", v);
    len = sizeof v;
    getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &len);
    printf("SO_TYPE: %d\n", v);
    len = sizeof v;
    getsockopt(s, SOL_SOCKET, SO_DOMAIN, &v, &len);
    printf("SO_DOMAIN: %d\n", v);
    report("setsockopt TCP_NODELAY", setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
    len = 2;
    v = 0;
    report("getsockopt short len", getsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, &len));
    printf("short len: %u value %d\n", len, v);
    struct timeval tv = {1, 500000};
    report("setsockopt SO_RCVTIMEO", setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv));
    memset(&tv, 0, sizeof tv);
    len = sizeof tv;
    getsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, &len);
    printf("SO_RCVTIMEO: %ld.%06ld\n", (long)tv.tv_sec, (long)tv.tv_usec);
    report("setsockopt negative len", setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, -1));
    report("setsockopt short len", setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, 2));
    report("setsockopt NULL value", setsockopt(s, SOL_SOCKET, SO_REUSEADDR, NULL, 4));
    report("getsockopt NULL len", getsockopt(s, SOL_SOCKET, SO_REUSEADDR, &v, NULL));
    len = 4;
    report("getsockopt NULL value", getsockopt(s, SOL_SOCKET, SO_REUSEADDR, NULL, &len));
    report("getsockopt unknown", getsockopt(s, SOL_SOCKET, 9999, &v, &len));
    report("setsockopt unknown level", setsockopt(s, 9999, 1, &one, sizeof one));
    /* AF_UNIX has options at SOL_SOCKET only: every other level is EOPNOTSUPP. */
    int u = socket(AF_UNIX, SOCK_STREAM, 0);
    report("unix setsockopt unknown level", setsockopt(u, 9999, 1, &one, sizeof one));
    len = sizeof v;
    report("unix getsockopt unknown level", getsockopt(u, 9999, 1, &v, &len));
    report("unix setsockopt TCP level", setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one));
    close(u);
    report("socket bad flags", socket(AF_INET, SOCK_STREAM | 0x100, 0));
    report("socket bad type", socket(AF_INET, 11, 0));
    report("socket bad protocol", socket(AF_INET, SOCK_STREAM, IPPROTO_UDP));
    report("socket nonblock", fcntl(socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0), F_GETFL) & O_NONBLOCK);
    close(s);
}

static void bad_args(void) {
    // A read-only page and, after it, one that is not mapped.
    char *ro = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *page = ro + 4096;
    munmap(page, 4096);
    mprotect(ro, 4096, PROT_READ);
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    int p[2];
    pipe(p);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    report("bind bad addr", bind(s, (struct sockaddr *)page, sizeof a));
    report("bind long addrlen", bind(s, (struct sockaddr *)&a, 200));
    report("bind negative addrlen", bind(s, (struct sockaddr *)&a, -1));
    report("bind EBADF", bind(999, (struct sockaddr *)&a, sizeof a));
    report("bind ENOTSOCK", bind(p[0], (struct sockaddr *)&a, sizeof a));
    report("bind ENOTSOCK bad addr", bind(p[0], (struct sockaddr *)page, sizeof a));
    report("connect ENOTSOCK bad addr", connect(p[0], (struct sockaddr *)page, sizeof a));
    report("connect EBADF", connect(-1, (struct sockaddr *)&a, sizeof a));
    report("listen ENOTSOCK", listen(p[0], 1));
    report("listen EBADF", listen(1234, 1));
    report("accept EBADF", accept(-5, NULL, NULL));
    report("accept ENOTSOCK", accept(p[1], NULL, NULL));
    report("accept4 bad flags", accept4(s, NULL, NULL, 1));
    report("accept on datagram socket", accept(s, NULL, NULL));
    report("shutdown ENOTSOCK", shutdown(p[0], SHUT_RD));
    report("shutdown not connected", shutdown(s, SHUT_RD));
    report("getsockopt ENOTSOCK", getsockopt(p[0], SOL_SOCKET, SO_TYPE, &a, &len));
    report("socketpair bad vector", socketpair(AF_UNIX, SOCK_STREAM, 0, (int *)page));
    report("socketpair read-only vector", socketpair(AF_UNIX, SOCK_STREAM, 0, (int *)ro));
    report("socketpair inet", socketpair(AF_INET, SOCK_STREAM, 0, p));
    bind(s, (struct sockaddr *)&a, sizeof a);
    report("getsockname bad addr", getsockname(s, (struct sockaddr *)page, &len));
    report("getsockname bad len", getsockname(s, (struct sockaddr *)&a, (socklen_t *)page));
    len = -1;
    report("getsockname negative len", getsockname(s, (struct sockaddr *)&a, &len));
    len = sizeof a;
    report("getpeername not connected", getpeername(s, (struct sockaddr *)&a, &len));
    getsockname(s, (struct sockaddr *)&a, &len);
    report("sendto bad buffer", sendto(s, page, 10, 0, (struct sockaddr *)&a, sizeof a));
    report("sendto bad addr", sendto(s, "x", 1, 0, (struct sockaddr *)page, sizeof a));
    report("sendto past user space", sendto(s, (void *)0xffff800000000000ul, 10, 0, (struct sockaddr *)&a, sizeof a));
    report("sendmsg bad header", sendmsg(s, (struct msghdr *)page, 0));
    struct iovec iov = {page, 10};
    struct msghdr m = {.msg_name = &a, .msg_namelen = sizeof a, .msg_iov = &iov, .msg_iovlen = 1};
    report("sendmsg bad iovec", sendmsg(s, &m, 0));
    iov.iov_base = "ok";
    iov.iov_len = 2;
    m.msg_iovlen = 2000;
    report("sendmsg too many iovecs", sendmsg(s, &m, 0));
    m.msg_iovlen = 1;
    m.msg_control = page;
    m.msg_controllen = 32;
    report("sendmsg bad control", sendmsg(s, &m, 0));
    m.msg_control = NULL;
    m.msg_controllen = 0;
    m.msg_namelen = -1;
    report("sendmsg negative namelen", sendmsg(s, &m, 0));
    m.msg_namelen = sizeof a;
    report("sendmsg to self", sendmsg(s, &m, 0));
    char buf[8];
    report("recvfrom into read-only", recvfrom(s, ro, 8, MSG_PEEK, NULL, NULL));
    struct sockaddr_in from;
    report("recvfrom bad addrlen", recvfrom(s, buf, 8, 0, (struct sockaddr *)&from, (socklen_t *)page));
    report("recvmsg bad header", recvmsg(s, (struct msghdr *)page, MSG_DONTWAIT));
    iov.iov_base = buf;
    report("recvmsg nothing", recvmsg(s, &m, MSG_DONTWAIT));
    close(s);
    close(p[0]);
    close(p[1]);
}

static volatile int handled;
static void on_usr1(int sig) {
    (void)sig;
    handled++;
}

struct waiter {
    int listener;
    volatile int done;
    long result;
    int err;
};

static void *accept_waiter(void *arg) {
    struct waiter *w = arg;
    w->result = accept(w->listener, NULL, NULL);
    w->err = errno;
    w->done = 1;
    return NULL;
}

// A thread blocked in accept, signalled (again and again, until it returns: the first signal may
// come before it blocks): EINTR without SA_RESTART; with SA_RESTART it keeps waiting and takes
// the connection made afterwards.
static void accept_interrupted(int restart) {
    set_handler(SIGUSR1, on_usr1, restart ? SA_RESTART : 0);
    int port;
    struct waiter w = {.listener = tcp_listener(&port)};
    handled = 0;
    pthread_t t;
    pthread_create(&t, NULL, accept_waiter, &w);
    /* Without SA_RESTART the signals go on until accept gives up (the thread may reach it
     * only after a few signals on a busy host); with it, three handled signals then a client. */
    for (int i = 0; i < 500 && (!restart || handled < 3) && !w.done; i++) {
        pthread_kill(t, SIGUSR1);
        sleep_ms(20);
    }
    int c = -1;
    if (restart) {
        printf("accept SA_RESTART still waiting after signals: %d\n", !w.done);
        c = tcp_connect(port);
    }
    pthread_join(t, NULL);
    if (w.result >= 0) {
        printf("accept %s: connection, handler ran %d\n", restart ? "SA_RESTART" : "no restart", handled > 0);
        close(w.result);
    } else {
        printf("accept %s: -1 errno %d, handler ran %d\n", restart ? "SA_RESTART" : "no restart", w.err, handled > 0);
    }
    close(c);
    close(w.listener);
}

// A socket with a time limit (SO_RCVTIMEO of 5 s) read by a thread that a SA_RESTART handler
// interrupts: EINTR at once, as Linux's socket calls with a time limit are never restarted
// (under hrt the read was restarted and ran to its limit: EAGAIN).
static void *timed_read(void *arg) {
    struct waiter *r = arg; // `listener`: the socket read
    char c;
    r->result = read(r->listener, &c, 1);
    r->err = errno;
    r->done = 1;
    return NULL;
}

static void timed_read_interrupted(void) {
    set_handler(SIGUSR1, on_usr1, SA_RESTART);
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    struct timeval limit = {5, 0};
    setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    struct waiter r = {.listener = sv[0]};
    handled = 0;
    pthread_t t;
    pthread_create(&t, NULL, timed_read, &r);
    for (int i = 0; i < 500 && !r.done; i++) {
        pthread_kill(t, SIGUSR1);
        sleep_ms(20);
    }
    pthread_join(t, NULL);
    printf("read with SO_RCVTIMEO under SA_RESTART: %ld %s, handler ran %d\n", r.result,
           r.result < 0 ? strerrorname_np(r.err) : "", handled > 0);
    close(sv[0]);
    close(sv[1]);
}

// One epoll instance over a listener and the connections it accepts: three clients each send a
// message; the server accepts, reads, echoes, and sees each client's end.
static void epoll_many(void) {
    int port;
    int l = tcp_listener(&port);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = l};
    epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
    int c[3];
    for (int i = 0; i < 3; i++) {
        c[i] = tcp_connect(port);
        char msg[16];
        int n = snprintf(msg, sizeof msg, "client %d", i);
        send(c[i], msg, n, 0);
    }
    int accepted = 0, messages = 0, ends = 0;
    while (messages < 3 || ends < 3) {
        struct epoll_event got[8];
        int n = epoll_wait(ep, got, 8, 5000);
        if (n <= 0) {
            report("epoll_wait", n);
            break;
        }
        for (int i = 0; i < n; i++) {
            int fd = got[i].data.fd;
            if (fd == l) {
                int s = accept(l, NULL, NULL);
                struct epoll_event e = {.events = EPOLLIN, .data.fd = s};
                epoll_ctl(ep, EPOLL_CTL_ADD, s, &e);
                accepted++;
                continue;
            }
            char buf[32];
            long r = recv(fd, buf, sizeof buf, 0);
            if (r > 0) {
                messages++;
                send(fd, buf, r, 0);
                // The client closes once it has its echo.
                for (int k = 0; k < 3; k++) {
                    char e[32];
                    if (c[k] >= 0 && recv(c[k], e, sizeof e, MSG_DONTWAIT) > 0) {
                        close(c[k]);
                        c[k] = -1;
                    }
                }
            } else {
                ends++;
                epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                close(fd);
            }
        }
    }
    printf("epoll: accepted %d messages %d ends %d\n", accepted, messages, ends);
    close(ep);
    close(l);
}

// The server a native peer talks to.
static int server(void) {
    int port;
    int l = tcp_listener(&port);
    printf("port %d\n", port);
    fflush(stdout);
    int c = accept(l, NULL, NULL);
    char buf[256];
    long n = 0, r;
    while (n < (long)sizeof buf && (r = recv(c, buf + n, sizeof buf - n, 0)) > 0) {
        n += r;
        if (buf[n - 1] == '\n')
            break;
    }
    for (long i = 0; i < n; i++)
        buf[i] = toupper((unsigned char)buf[i]);
    send(c, buf, n, 0);
    close(c);
    printf("served %ld bytes\n", n);
    return 0;
}

// AF_UNIX names inside the monitor's own /proc: EACCES under hrt.
static int proc_names(void) {
    const char *names[] = {"/proc/self/pagemap", "/proc/self/cwd/../../../../../../../../../../../../../../../../proc/self/mem", "/proc/thread-self/attr"};
    for (int i = 0; i < 3; i++) {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        strcpy(a.sun_path, names[i]);
        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        int r = connect(s, (struct sockaddr *)&a, sizeof a);
        printf("connect %s: %d errno %d\n", names[i], r, errno);
        int d = socket(AF_UNIX, SOCK_DGRAM, 0);
        r = sendto(d, "x", 1, 0, (struct sockaddr *)&a, sizeof a);
        printf("sendto %s: %d errno %d\n", names[i], r, errno);
        close(s);
        close(d);
    }
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, "/proc/self/sock");
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    int r = bind(s, (struct sockaddr *)&a, sizeof a);
    printf("bind /proc/self/sock: %d errno %d\n", r, errno);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && strcmp(argv[1], "server") == 0)
        return server();
    if (argc > 1 && strcmp(argv[1], "proc") == 0)
        return proc_names();
    tcp_echo();
    udp();
    unix_rights();
    unix_names();
    options();
    bad_args();
    accept_interrupted(0);
    accept_interrupted(1);
    timed_read_interrupted();
    epoll_many();
    // SIGPIPE with the default action ends the program (141).
    signal(SIGPIPE, SIG_DFL);
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    close(sv[1]);
    printf("sending to a closed peer with SIGPIPE's default action\n");
    send(sv[0], "x", 1, 0);
    printf("not reached\n");
    return 0;
}
