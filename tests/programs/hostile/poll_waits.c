/* poll and epoll waits: `hrt` first makes them with a zero timeout and hands them to a waiting
 * thread only if nothing is ready. What that must not change: a wait with nothing ready waits
 * (for the peer's write, or until its timeout), what is ready comes back at once, and an
 * edge-triggered event is reported once. Output compared with the native run. */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

static int pipe_fds[2];

static void pause_ms(int ms) {
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
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

    int ep = epoll_create1(0);
    struct epoll_event e = {EPOLLIN | EPOLLET, {.u64 = 42}}, out[4];
    epoll_ctl(ep, EPOLL_CTL_ADD, pipe_fds[0], &e);
    printf("epoll_wait, nothing ready, timeout 30 ms: %d\n", epoll_wait(ep, out, 4, 30));
    pthread_create(&t, NULL, write_later, NULL);
    int n = epoll_wait(ep, out, 4, 1000);
    printf("epoll_wait, ready after 50 ms: %d data %llu\n", n, n > 0 ? (unsigned long long)out[0].data.u64 : 0ULL);
    pthread_join(t, NULL);
    printf("epoll_wait, the same edge again, timeout 30 ms: %d\n", epoll_wait(ep, out, 4, 30));
    (void)!write(pipe_fds[1], "y", 1);
    n = epoll_pwait(ep, out, 4, -1, NULL);
    printf("epoll_pwait, a new edge ready now: %d data %llu\n", n, n > 0 ? (unsigned long long)out[0].data.u64 : 0ULL);
    return 0;
}
