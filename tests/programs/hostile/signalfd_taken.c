/* A signalfd is readable only while a signal of its mask is pending, as on Linux: once the
 * signal is taken another way (sigtimedwait, a handler after the mask opens, another signalfd
 * with the same mask, SIG_IGN discarding it) poll, select and epoll say not readable and a
 * read is EAGAIN. One line per case. Usage: signalfd_taken */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <unistd.h>

static volatile sig_atomic_t handled;
static void on_usr2(int sig) { handled += sig == SIGUSR2; }

/* What poll, select and epoll say of `fd` now, and what a read gets. */
static void show(const char *what, int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int polled = poll(&p, 1, 0);
    fd_set set;
    FD_ZERO(&set);
    FD_SET(fd, &set);
    struct timeval zero = {0, 0};
    int selected = select(fd + 1, &set, NULL, NULL, &zero);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd}, out;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    int waited = epoll_wait(ep, &out, 1, 0);
    close(ep);
    printf("%-34s poll %d select %d epoll %d\n", what, polled, selected, waited);
}

static void read_one(const char *what, int fd) {
    struct signalfd_siginfo si;
    ssize_t r = read(fd, &si, sizeof si);
    printf("%-34s read %zd %s signo %d\n", what, r, r < 0 ? strerrorname_np(errno) : "", r > 0 ? (int)si.ssi_signo : 0);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    sigset_t usr1, usr2, both;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    sigemptyset(&both);
    sigaddset(&both, SIGUSR1);
    sigaddset(&both, SIGUSR2);
    sigprocmask(SIG_BLOCK, &both, NULL);
    int a = signalfd(-1, &usr1, SFD_NONBLOCK), b = signalfd(-1, &usr1, SFD_NONBLOCK);

    raise(SIGUSR1);
    show("SIGUSR1 pending", a);
    struct timespec zero = {0, 0};
    printf("sigtimedwait took %d\n", sigtimedwait(&usr1, NULL, &zero));
    show("after sigtimedwait", a);
    read_one("after sigtimedwait", a);

    raise(SIGUSR1);
    show("pending again, second signalfd", b);
    read_one("first signalfd", a);
    show("second after the first's read", b);
    read_one("second after the first's read", b);

    signal(SIGUSR2, on_usr2);
    int c = signalfd(-1, &usr2, SFD_NONBLOCK);
    raise(SIGUSR2);
    show("SIGUSR2 pending", c);
    sigprocmask(SIG_UNBLOCK, &usr2, NULL);
    printf("handler ran %d\n", (int)handled);
    show("after the handler took it", c);
    sigprocmask(SIG_BLOCK, &usr2, NULL);

    raise(SIGUSR2);
    show("pending, then SIG_IGN", c);
    signal(SIGUSR2, SIG_IGN);
    show("after SIG_IGN discarded it", c);
    printf("done\n");
    return 0;
}
