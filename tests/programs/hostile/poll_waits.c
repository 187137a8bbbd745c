/* poll, ppoll, select, pselect and epoll waits, and reads of an eventfd and a timerfd: `hrt`
 * first makes them without waiting (a zero timeout, RWF_NOWAIT) and hands them to a waiting
 * thread only if nothing is
 * ready. What that must not change: a wait with nothing ready waits (for the peer's write, or
 * until its timeout), what is ready comes back at once, an edge-triggered event is reported
 * once, a non-blocking descriptor says EAGAIN. Output compared with the native run. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <sys/select.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static int pipe_fds[2];

static void pause_ms(int ms) {
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

static int event_fd;

static void *signal_later(void *arg) {
    (void)arg;
    uint64_t three = 3;
    pause_ms(50);
    (void)!write(event_fd, &three, sizeof three);
    return NULL;
}

static void *write_later(void *arg) {
    (void)arg;
    pause_ms(50);
    (void)!write(pipe_fds[1], "x", 1);
    return NULL;
}

int main(void) {
    char c;
    pthread_t t;
    if (pipe(pipe_fds)) {
        perror("pipe");
        return 1;
    }
    struct pollfd f = {pipe_fds[0], POLLIN, 0};
    printf("poll, nothing ready, timeout 0: %d\n", poll(&f, 1, 0));
    printf("poll, nothing ready, timeout 30 ms: %d\n", poll(&f, 1, 30));
    pthread_create(&t, NULL, write_later, NULL);
    int r = poll(&f, 1, -1);
    printf("poll, ready after 50 ms, no timeout: %d revents %#x\n", r, f.revents);
    pthread_join(t, NULL);
    r = poll(&f, 1, -1);
    printf("poll, ready now, no timeout: %d revents %#x\n", r, f.revents);
    (void)!read(pipe_fds[0], &c, 1);

    /* select, pselect6 and ppoll: the same, with the sets and the time left as Linux leaves
     * them (a set that had nothing ready is still the program's when the call waits). */
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(pipe_fds[0], &rs);
    struct timeval tv = {0, 30000};
    r = select(pipe_fds[0] + 1, &rs, NULL, NULL, &tv);
    printf("select, nothing ready, timeout 30 ms: %d, left %ld.%06ld\n", r, (long)tv.tv_sec, (long)tv.tv_usec);
    FD_SET(pipe_fds[0], &rs);
    pthread_create(&t, NULL, write_later, NULL);
    r = select(pipe_fds[0] + 1, &rs, NULL, NULL, NULL);
    printf("select, ready after 50 ms, no timeout: %d, bit %d\n", r, FD_ISSET(pipe_fds[0], &rs));
    pthread_join(t, NULL);
    /* 10 s, most of which is left (a loaded host may stall the call for a while). */
    struct timeval second = {10, 0};
    r = select(pipe_fds[0] + 1, &rs, NULL, NULL, &second);
    printf("select, ready now, timeout 10 s: %d, bit %d, over 5 s left %d\n", r, FD_ISSET(pipe_fds[0], &rs),
           second.tv_sec >= 5 && second.tv_sec <= 10);
    fd_set ws;
    FD_ZERO(&ws);
    FD_SET(pipe_fds[1], &ws);
    FD_SET(pipe_fds[0], &rs);
    r = pselect(pipe_fds[1] + 1, &rs, &ws, NULL, NULL, NULL);
    printf("pselect, both ends ready now: %d, read %d write %d\n", r, FD_ISSET(pipe_fds[0], &rs), FD_ISSET(pipe_fds[1], &ws));
    struct timespec onesec = {10, 0};
    f.revents = 0;
    r = ppoll(&f, 1, &onesec, NULL);
    printf("ppoll, ready now, timeout 10 s: %d revents %#x, over 5 s left %d\n", r, f.revents,
           onesec.tv_sec >= 5 && onesec.tv_sec <= 10);
    (void)!read(pipe_fds[0], &c, 1);
    struct timespec thirty = {0, 30000000L};
    r = ppoll(&f, 1, &thirty, NULL);
    printf("ppoll, nothing ready, timeout 30 ms: %d, left %ld.%09ld\n", r, (long)thirty.tv_sec, thirty.tv_nsec);
    pthread_create(&t, NULL, write_later, NULL);
    r = ppoll(&f, 1, NULL, NULL);
    printf("ppoll, ready after 50 ms, no timeout: %d revents %#x\n", r, f.revents);
    pthread_join(t, NULL);
    (void)!read(pipe_fds[0], &c, 1);

    int ep = epoll_create1(0);
    struct epoll_event e = {EPOLLIN | EPOLLET, {.u64 = 42}}, out[4];
    epoll_ctl(ep, EPOLL_CTL_ADD, pipe_fds[0], &e);
    printf("epoll_wait, nothing ready, timeout 30 ms: %d\n", epoll_wait(ep, out, 4, 30));
    pthread_create(&t, NULL, write_later, NULL);
    int n = epoll_wait(ep, out, 4, 10000); // ends after about 50 ms
    printf("epoll_wait, ready after 50 ms: %d data %llu\n", n, n > 0 ? (unsigned long long)out[0].data.u64 : 0ULL);
    pthread_join(t, NULL);
    printf("epoll_wait, the same edge again, timeout 30 ms: %d\n", epoll_wait(ep, out, 4, 30));
    (void)!write(pipe_fds[1], "y", 1);
    n = epoll_pwait(ep, out, 4, -1, NULL);
    printf("epoll_pwait, a new edge ready now: %d data %llu\n", n, n > 0 ? (unsigned long long)out[0].data.u64 : 0ULL);

    uint64_t v = 0;
    int quiet = eventfd(0, EFD_NONBLOCK);
    long got = read(quiet, &v, sizeof v);
    printf("non-blocking eventfd read, nothing there: %ld %s\n", got, got < 0 && errno == EAGAIN ? "EAGAIN" : "?");
    event_fd = eventfd(0, 0);
    pthread_create(&t, NULL, signal_later, NULL);
    got = read(event_fd, &v, sizeof v);
    printf("eventfd read, signalled after 50 ms: %ld value %llu\n", got, (unsigned long long)v);
    pthread_join(t, NULL);
    int timer = timerfd_create(CLOCK_MONOTONIC, 0);
    struct itimerspec in30 = {{0, 0}, {0, 30 * 1000000L}};
    timerfd_settime(timer, 0, &in30, NULL);
    got = read(timer, &v, sizeof v);
    printf("timerfd read, expires after 30 ms: %ld expirations %llu\n", got, (unsigned long long)v);

    // An invalid timeout is EINVAL even with a descriptor ready (the try without waiting must
    // not answer first).
    int ready[2];
    pipe(ready);
    (void)!write(ready[1], "x", 1);
    struct pollfd rp = {ready[0], POLLIN, 0};
    struct timespec bad[] = {{0, -1}, {0, 1000000000}, {-1, 0}};
    for (int i = 0; i < 3; i++) {
        int r = ppoll(&rp, 1, &bad[i], NULL);
        printf("ppoll, ready, timeout {%ld, %ld}: %d%s\n", (long)bad[i].tv_sec, bad[i].tv_nsec, r, r < 0 && errno == EINVAL ? " EINVAL" : "");
        fd_set rs;
        FD_ZERO(&rs);
        FD_SET(ready[0], &rs);
        r = pselect(ready[0] + 1, &rs, NULL, NULL, &bad[i], NULL);
        printf("pselect, ready, same timeout: %d%s\n", r, r < 0 && errno == EINVAL ? " EINVAL" : "");
    }
    struct timeval tvs[] = {{0, -1}, {-1, 0}, {0, 1500000}};
    for (int i = 0; i < 3; i++) {
        fd_set rs;
        FD_ZERO(&rs);
        FD_SET(ready[0], &rs);
        long sec = tvs[i].tv_sec, usec = tvs[i].tv_usec; // select writes back the time left
        int r = select(ready[0] + 1, &rs, NULL, NULL, &tvs[i]);
        printf("select, ready, timeout {%ld, %ld}: %d%s\n", sec, usec, r, r < 0 && errno == EINVAL ? " EINVAL" : "");
    }
    return 0;
}
