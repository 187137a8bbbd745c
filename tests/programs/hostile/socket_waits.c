#define _GNU_SOURCE
/* Socket calls that must wait, and those that may not: `hrt` first tries sendto/sendmsg/
 * recvfrom/recvmsg with MSG_DONTWAIT and hands them to a waiting thread only if the host
 * says EAGAIN. What that must not change: MSG_WAITALL waits for all its bytes, SO_RCVLOWAT
 * waits for that many, a stream send of more than the socket holds sends all of it, a
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
#include <sys/socket.h>
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

/* Reads everything the other side sends, slowly at first. */
static void *slow_reader(void *arg) {
    long total = 0, n;
    char buf[65536];
    pause_ms(50);
    while ((n = recv(peer, buf, sizeof buf, 0)) > 0)
        total += n;
    *(long *)arg = total;
    return NULL;
}

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

    /* SO_RCVLOWAT 20: a plain receive waits until 20 bytes are there. */
    pair(SOCK_STREAM, sv);
    int low = 20;
    if (setsockopt(sv[0], SOL_SOCKET, SO_RCVLOWAT, &low, sizeof low))
        perror("SO_RCVLOWAT");
    pthread_create(&t, NULL, two_halves, NULL);
    pause_ms(20);
    n = recvfrom(sv[0], buf, sizeof buf, 0, NULL, NULL);
    printf("stream recvfrom with SO_RCVLOWAT 20: %ld\n", n);
    pthread_join(t, NULL);
    close(sv[0]);
    close(sv[1]);

    /* A stream send far larger than the socket's buffer sends all of it. */
    pair(SOCK_STREAM, sv);
    long got = 0;
    pthread_create(&t, NULL, slow_reader, &got);
    size_t big = 4 << 20;
    char *data = calloc(1, big);
    n = send(sv[0], data, big, 0);
    printf("stream send of 4 MiB: %ld\n", n);
    close(sv[0]);
    pthread_join(t, NULL);
    printf("the reader got %ld\n", got);
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
