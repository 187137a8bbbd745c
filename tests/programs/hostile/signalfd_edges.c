/* A signalfd in an edge-triggered epoll set: each signal of its mask that becomes pending is
 * a new edge, as Linux's signalfd wakes its waiters for each (hrt wrote its eventfd once until
 * it was emptied: a second signal beside the first woke nobody). A signal already pending
 * again is no new edge on Linux either. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

static int ep;
static int edge(void) {
    struct epoll_event ev;
    return epoll_wait(ep, &ev, 1, 100);
}

int main(void) {
    sigset_t m;
    sigemptyset(&m);
    sigaddset(&m, SIGUSR1);
    sigaddset(&m, SIGUSR2);
    sigaddset(&m, SIGRTMIN);
    sigprocmask(SIG_BLOCK, &m, 0);
    int fd = signalfd(-1, &m, SFD_NONBLOCK);
    ep = epoll_create1(0);
    struct epoll_event ev = {EPOLLIN | EPOLLET, {0}};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    raise(SIGUSR1);
    printf("SIGUSR1 pending: %d edge\n", edge());
    printf("nothing new: %d edge\n", edge());
    raise(SIGUSR2);
    printf("SIGUSR2 beside it: %d edge\n", edge());
    struct signalfd_siginfo si;
    printf("read: signal %d\n", read(fd, &si, sizeof si) == sizeof si ? (int)si.ssi_signo : -1);
    raise(SIGUSR1);
    printf("SIGUSR1 again after its read: %d edge\n", edge());
    raise(SIGUSR2);
    printf("SIGUSR2 while pending already: %d edge\n", edge());
    union sigval v = {.sival_int = 7};
    sigqueue(getpid(), SIGRTMIN, v);
    printf("SIGRTMIN queued: %d edge\n", edge());
    int n = 0;
    while (read(fd, &si, sizeof si) == sizeof si) n++;
    printf("read %d more\n", n);
    printf("after the reads: %d edge\n", edge());
    return 0;
}
