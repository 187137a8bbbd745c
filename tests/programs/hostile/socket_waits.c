#define _GNU_SOURCE
/* Socket calls that must wait, and those that may not: `hrt` first tries sendto/sendmsg/
 * recvfrom/recvmsg with MSG_DONTWAIT and hands them to a waiting thread only if the host
 * says EAGAIN. What that must not change: MSG_WAITALL waits for all its bytes, SO_RCVLOWAT
 * waits for that many, a stream send or write of more than the socket holds sends all of it
 * in order (the part that fits is sent at once, the rest waits) and a signal interrupting it
 * answers the part sent, a
 * datagram receive with nothing queued waits for the next one, and data already queued is
 * returned at once; a non-blocking descriptor (or MSG_DONTWAIT) with nothing there answers
 * EAGAIN. The peer writes from another thread after a pause. Output compared with the native
 * run. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static int peer;

static void pause_ms(int ms) {
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

/* Sends 10 bytes, pauses, sends 10 more. */
static void *two_halves(void *arg) {
    (void)arg;
    send(peer, "0123456789", 10, 0);
    pause_ms(50);
    send(peer, "abcdefghij", 10, 0);
    return NULL;
}

/* The byte at offset `i` of the big sends. */
static unsigned char pattern(long i) { return (unsigned char)(i * 7 + i / 4096); }

/* Reads everything the other side sends, slowly at first; counts bytes that are not the
 * pattern's at their offset (a send that went on from the wrong place). */
static long wrong_bytes;
static void *slow_reader(void *arg) {
    long total = 0, n;
    static unsigned char buf[65536];
    pause_ms(50);
    wrong_bytes = 0;
    while ((n = recv(peer, buf, sizeof buf, 0)) > 0) {
        for (long i = 0; i < n; i++)
            wrong_bytes += buf[i] != pattern(total + i);
        total += n;
    }
    *(long *)arg = total;
    return NULL;
}

static void on_alarm(int sig) { (void)sig; }

static void *one_datagram_later(void *arg) {
    (void)arg;
    pause_ms(50);
    send(peer, "late datagram", 13, 0);
    return NULL;
}

static void pair(int type, int sv[2]) {
    if (socketpair(AF_UNIX, type, 0, sv)) {
        perror("socketpair");
        exit(1);
    }
    peer = sv[1];
}

int main(void) {
    int sv[2];
    pthread_t t;
    char buf[256];

    /* MSG_WAITALL on a stream: the first half is there, the call waits for the second. */
    pair(SOCK_STREAM, sv);
    pthread_create(&t, NULL, two_halves, NULL);
    pause_ms(20);
    long n = recv(sv[0], buf, 20, MSG_WAITALL);
    printf("stream recv MSG_WAITALL 20: %ld '%.*s'\n", n, (int)(n > 0 ? n : 0), buf);
    pthread_join(t, NULL);
    close(sv[0]);
    close(sv[1]);

    /* The same through recvmsg. */
    pair(SOCK_STREAM, sv);
    pthread_create(&t, NULL, two_halves, NULL);
    pause_ms(20);
    struct iovec iov = {buf, 20};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    n = recvmsg(sv[0], &m, MSG_WAITALL);
    printf("stream recvmsg MSG_WAITALL 20: %ld '%.*s'\n", n, (int)(n > 0 ? n : 0), buf);
    pthread_join(t, NULL);
    close(sv[0]);
    close(sv[1]);

    /* SO_RCVLOWAT 20: a plain receive waits until 20 bytes are there. Set through a second
     * descriptor of the socket after a receive through the first (hrt keeps the value it last
     * asked for until the program changes one). */
    pair(SOCK_STREAM, sv);
    if (send(sv[1], "k", 1, 0) != 1 || recvfrom(sv[0], buf, sizeof buf, 0, NULL, NULL) != 1)
        perror("first receive");
    int low = 20, other = dup(sv[0]);
    if (setsockopt(other, SOL_SOCKET, SO_RCVLOWAT, &low, sizeof low))
        perror("SO_RCVLOWAT");
    close(other);
    pthread_create(&t, NULL, two_halves, NULL);
    pause_ms(20);
    n = recvfrom(sv[0], buf, sizeof buf, 0, NULL, NULL);
    printf("stream recvfrom with SO_RCVLOWAT 20: %ld\n", n);
    pthread_join(t, NULL);
    close(sv[0]);
    close(sv[1]);

    /* A stream send far larger than the socket's buffer sends all of it, in order; so does a
     * write. */
    size_t big = 4 << 20;
    unsigned char *data = malloc(big);
    for (size_t i = 0; i < big; i++)
        data[i] = pattern((long)i);
    for (int use_write = 0; use_write < 2; use_write++) {
        pair(SOCK_STREAM, sv);
        long got = 0;
        pthread_create(&t, NULL, slow_reader, &got);
        n = use_write ? write(sv[0], data, big) : send(sv[0], data, big, 0);
        printf("stream %s of 4 MiB: %ld\n", use_write ? "write" : "send", n);
        close(sv[0]);
        pthread_join(t, NULL);
        printf("the reader got %ld, %ld bytes out of place\n", got, wrong_bytes);
        close(sv[1]);
    }

    /* Nobody reads: a signal interrupts the send once the buffer is full, which answers the
     * part it sent (what the buffer took), not EINTR. */
    pair(SOCK_STREAM, sv);
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    /* Every 200 ms until the send ends: a loaded host may run the send after the first. */
    struct itimerval it = {{0, 200000}, {0, 200000}}, off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &it, NULL);
    n = send(sv[0], data, big, 0);
    int e = errno;
    setitimer(ITIMER_REAL, &off, NULL);
    while (recv(sv[1], buf, sizeof buf, MSG_DONTWAIT) > 0) {
    }
    printf("interrupted stream send: %s\n",
           n > 0 && (size_t)n < big ? "a part" : n < 0 && e == EINTR ? "EINTR" : "all");
    close(sv[0]);
    close(sv[1]);
    free(data);

    /* Datagrams: one queued comes back at once, whole; with none queued the call waits. */
    pair(SOCK_DGRAM, sv);
    send(sv[1], "queued datagram", 15, 0);
    n = recv(sv[0], buf, sizeof buf, 0);
    printf("dgram recv (queued): %ld '%.*s'\n", n, (int)(n > 0 ? n : 0), buf);
    pthread_create(&t, NULL, one_datagram_later, NULL);
    n = recvfrom(sv[0], buf, sizeof buf, 0, NULL, NULL);
    printf("dgram recvfrom (waits): %ld '%.*s'\n", n, (int)(n > 0 ? n : 0), buf);
    pthread_join(t, NULL);
    n = sendto(sv[0], "x", 1, 0, NULL, 0);
    printf("dgram sendto: %ld\n", n);
    close(sv[0]);
    close(sv[1]);

    /* Nothing there: EAGAIN at once for MSG_DONTWAIT, a non-blocking socket, a non-blocking pipe. */
    pair(SOCK_STREAM, sv);
    n = recv(sv[0], buf, sizeof buf, MSG_DONTWAIT);
    printf("stream recv MSG_DONTWAIT, empty: %ld %s\n", n, n < 0 && errno == EAGAIN ? "EAGAIN" : "?");
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    n = recvfrom(sv[0], buf, sizeof buf, 0, NULL, NULL);
    printf("non-blocking recvfrom, empty: %ld %s\n", n, n < 0 && errno == EAGAIN ? "EAGAIN" : "?");
    n = read(sv[0], buf, sizeof buf);
    printf("non-blocking read, empty: %ld %s\n", n, n < 0 && errno == EAGAIN ? "EAGAIN" : "?");
    send(sv[1], "now", 3, 0);
    n = recv(sv[0], buf, sizeof buf, 0);
    printf("non-blocking recv, data: %ld '%.*s'\n", n, (int)(n > 0 ? n : 0), buf);
    close(sv[0]);
    close(sv[1]);
    int p[2];
    if (pipe2(p, O_NONBLOCK) == 0) {
        n = read(p[0], buf, sizeof buf);
        printf("non-blocking pipe read, empty: %ld %s\n", n, n < 0 && errno == EAGAIN ? "EAGAIN" : "?");
        close(p[0]);
        close(p[1]);
    }
    return 0;
}
