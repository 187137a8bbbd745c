/* epoll_pwait2 with a descriptor ready and a pending signal that the call's mask unblocks
 * returns the event, the signal staying pending, as epoll_pwait does and Linux does for both
 * (Linux looks for events first). hrt's epoll_pwait2 went to a worker and the signal ended it
 * with EINTR in 2-47 calls of 200. With a timeout and without one (NULL). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile int handled;
static void on_usr1(int sig) {
    (void)sig;
    handled++;
}

int main(void) {
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, 0);
    sigset_t usr1, unblocked;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, 0);
    sigprocmask(SIG_BLOCK, 0, &unblocked);
    sigdelset(&unblocked, SIGUSR1);
    int ep = epoll_create1(0), efd = eventfd(1, 0);
    struct epoll_event e = {EPOLLIN, {0}}, out;
    epoll_ctl(ep, EPOLL_CTL_ADD, efd, &e);
    for (int with_timeout = 1; with_timeout >= 0; with_timeout--) {
        int eintr = 0, events = 0;
        handled = 0;
        for (int i = 0; i < 200; i++) {
            struct timespec ts = {1, 0};
            raise(SIGUSR1);
            long r = syscall(SYS_epoll_pwait2, ep, &out, 1, with_timeout ? &ts : NULL, &unblocked, 8);
            if (r < 0) eintr++;
            if (r == 1) events++;
            /* The pending signal is taken here once the call has left it pending. */
            sigprocmask(SIG_UNBLOCK, &usr1, 0);
            sigprocmask(SIG_BLOCK, &usr1, 0);
        }
        printf("%s: events %d, EINTR %d, handler ran %d times\n", with_timeout ? "1 s timeout" : "no timeout",
               events, eintr, handled);
    }
    return 0;
}
