/* A wait that a signal ends writes back the time left, as Linux's poll_select_finish does (a
 * restart continues with it): select's timeval, and the timespec of the ppoll and pselect6
 * system calls. Another thread signals the waiting one every 30 ms during a 10 s wait on an
 * empty pipe (a handler without SA_RESTART), until the wait has ended: a signal that comes
 * before the wait begins (a loaded host) is taken outside it, and the next one ends it.
 * Prints each call's result, errno and whether the time left is shorter than the timeout and
 * not negative. hrt wrote it back only when the wait ended without a signal. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_t waiter;
static volatile int done;

static void on_signal(int sig) { (void)sig; }

static void *signaller(void *arg) {
    (void)arg;
    while (!done) {
        usleep(30000);
        if (!done)
            pthread_kill(waiter, SIGUSR1);
    }
    return NULL;
}

/* Ends the signaller (before anything is printed: no signal comes during a write). */
static void stop(pthread_t t) {
    done = 1;
    pthread_join(t, NULL);
}

static void report(const char *what, long r, int err, long long left_ns) {
    printf("%s: %ld %s, time left shorter and not negative: %d\n", what, r, r < 0 ? strerror(err) : "-",
           left_ns >= 0 && left_ns < 10000000000LL);
}

int main(void) {
    int fds[2];
    if (pipe(fds) != 0)
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    waiter = pthread_self();
    for (int call = 0; call < 3; call++) {
        pthread_t t;
        done = 0;
        pthread_create(&t, NULL, signaller, NULL);
        long r;
        int err;
        long long left;
        if (call == 0) {
            fd_set set;
            FD_ZERO(&set);
            FD_SET(fds[0], &set);
            struct timeval tv = {10, 0};
            r = select(fds[0] + 1, &set, NULL, NULL, &tv);
            err = errno;
            stop(t);
            left = tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL;
            report("select", r, err, left);
        } else if (call == 1) {
            struct pollfd p = {fds[0], POLLIN, 0};
            struct timespec ts = {10, 0};
            r = syscall(SYS_ppoll, &p, 1, &ts, NULL, 8);
            err = errno;
            stop(t);
            left = ts.tv_sec * 1000000000LL + ts.tv_nsec;
            report("ppoll", r, err, left);
        } else {
            fd_set set;
            FD_ZERO(&set);
            FD_SET(fds[0], &set);
            struct timespec ts = {10, 0};
            r = syscall(SYS_pselect6, fds[0] + 1, &set, NULL, NULL, &ts, NULL);
            err = errno;
            stop(t);
            left = ts.tv_sec * 1000000000LL + ts.tv_nsec;
            report("pselect6", r, err, left);
        }
    }
    return 0;
}
