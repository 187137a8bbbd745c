// signalfd: blocked signals read through the descriptor (tgkill, kill, sigqueue, a child's
// SIGCHLD), several records at once, O_NONBLOCK and EAGAIN, SFD_CLOEXEC, a new mask for an
// existing descriptor, dup and close, a blocking read woken by another thread, poll, select,
// and epoll with a pipe and the signalfd in one set; the error cases. Compared with the native
// run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SHOW_WIDTH 34
#include "show.h"

static sigset_t set_of(int a, int b) {
    sigset_t s;
    sigemptyset(&s);
    if (a)
        sigaddset(&s, a);
    if (b)
        sigaddset(&s, b);
    return s;
}

// Reads one batch and prints each record's signal, code and what the code says is in it.
static void take(const char *what, int fd, size_t room) {
    struct signalfd_siginfo si[4];
    ssize_t n = read(fd, si, room * sizeof si[0]);
    if (n < 0) {
        printf("%-34s -1 %s\n", what, strerror(errno));
        return;
    }
    printf("%-34s %zd bytes:", what, n);
    for (ssize_t i = 0; i < n / (ssize_t)sizeof si[0]; i++) {
        printf(" [sig %u code %d", si[i].ssi_signo, si[i].ssi_code);
        if (si[i].ssi_code == SI_TKILL || si[i].ssi_code == SI_USER || si[i].ssi_code == SI_QUEUE)
            printf(" pid-ok %d uid-ok %d", si[i].ssi_pid == (unsigned)getpid(), si[i].ssi_uid == getuid());
        if (si[i].ssi_code == SI_QUEUE)
            printf(" int %d", si[i].ssi_int);
        printf("]");
    }
    printf("\n");
}

static int readable(int fd) {
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, 0);
    return r < 0 ? -1 : (r == 1 && (p.revents & POLLIN));
}

static void *send_later(void *arg) {
    (void)arg;
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    kill(getpid(), SIGUSR1);
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    sigset_t both = set_of(SIGUSR1, SIGUSR2), chld = set_of(SIGCHLD, 0);
    sigprocmask(SIG_BLOCK, &both, NULL);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    sigset_t usr1 = set_of(SIGUSR1, 0);

    // Errors.
    show("sizemask 4", syscall(SYS_signalfd4, -1, &usr1, 4, 0));
    show("bad flags", signalfd(-1, &usr1, 0x1234));
    show("bad mask pointer", signalfd(-1, (sigset_t *)8, 0));
    show("fd not a descriptor", signalfd(999, &usr1, 0));
    int p[2];
    pipe(p);
    show("fd a pipe", signalfd(p[0], &usr1, 0));

    // Non-blocking, close-on-exec.
    int fd = signalfd(-1, &usr1, SFD_NONBLOCK | SFD_CLOEXEC);
    printf("signalfd ok %d cloexec %d nonblock %d\n", fd >= 0, fcntl(fd, F_GETFD) == FD_CLOEXEC,
           (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0);
    take("read, none pending", fd, 1);
    show("readable, none pending", readable(fd));
    // A signalfd cannot be written (under hrt its eventfd took the write and became readable),
    // nor is it ever writable to poll, select or epoll (its eventfd is), and its link names it.
    unsigned long long one = 1;
    show("write", write(fd, &one, sizeof one));
    show("readable after the write", readable(fd));
    struct pollfd in_out = {fd, POLLIN | POLLOUT, 0};
    show("poll POLLIN|POLLOUT, none pending", poll(&in_out, 1, 0));
    printf("  revents %#x\n", in_out.revents);
    fd_set wr;
    FD_ZERO(&wr);
    FD_SET(fd, &wr);
    struct timeval zero = {0, 0};
    show("select for writing", select(fd + 1, NULL, &wr, NULL, &zero));
    int ep_out = epoll_create1(0);
    struct epoll_event want_out = {.events = EPOLLIN | EPOLLOUT, .data.fd = fd}, got_out;
    epoll_ctl(ep_out, EPOLL_CTL_ADD, fd, &want_out);
    show("epoll EPOLLIN|EPOLLOUT, none pending", epoll_wait(ep_out, &got_out, 1, 0));
    close(ep_out);
    char link[64], target[64] = "";
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    readlink(link, target, sizeof target - 1);
    printf("  link %s\n", target);
    raise(SIGUSR1);
    show("readable after raise", readable(fd));
    take("read after raise", fd, 1);
    show("readable after read", readable(fd));
    take("read again", fd, 1);
    kill(getpid(), SIGUSR1);
    take("read after kill", fd, 1);
    sigqueue(getpid(), SIGUSR1, (union sigval){.sival_int = 42});
    take("read after sigqueue", fd, 1);
    char small[100];
    show("read, 100-byte buffer", read(fd, small, sizeof small));

    // A new mask: SIGUSR2 only; SIGUSR1 stays pending, outside it.
    show("new mask", signalfd(fd, &both, 0) == fd);
    sigset_t usr2 = set_of(SIGUSR2, 0);
    show("mask SIGUSR2 only", signalfd(fd, &usr2, 0) == fd);
    raise(SIGUSR1);
    show("readable, SIGUSR1 outside", readable(fd));
    raise(SIGUSR2);
    take("read SIGUSR2", fd, 2);
    sigset_t pend;
    sigpending(&pend);
    printf("SIGUSR1 still pending %d\n", sigismember(&pend, SIGUSR1));
    show("both again", signalfd(fd, &both, 0) == fd);
    raise(SIGUSR2);
    take("two records at once", fd, 4);

    // dup and close.
    int d = dup(fd);
    raise(SIGUSR1);
    take("read the duplicate", d, 1);
    close(fd);
    raise(SIGUSR2);
    show("duplicate readable after close", readable(d));
    take("read the duplicate again", d, 1);
    close(d);
    take("read after close", d, 1);

    // select, and a blocking read woken by another thread.
    fd = signalfd(-1, &usr1, 0);
    pthread_t t;
    pthread_create(&t, NULL, send_later, NULL);
    take("blocking read", fd, 1);
    pthread_join(t, NULL);
    fd_set rd;
    FD_ZERO(&rd);
    FD_SET(fd, &rd);
    struct timeval tv = {0, 0};
    show("select, none pending", select(fd + 1, &rd, NULL, NULL, &tv));
    kill(getpid(), SIGUSR1);
    FD_ZERO(&rd);
    FD_SET(fd, &rd);
    show("select after kill", select(fd + 1, &rd, NULL, NULL, NULL));
    take("read", fd, 1);

    // epoll: a pipe and the signalfd in one set.
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 111};
    epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
    ev.data.u64 = 222;
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    struct epoll_event got[4];
    show("epoll, nothing", epoll_wait(ep, got, 4, 0));
    write(p[1], "x", 1);
    int n = epoll_wait(ep, got, 4, -1);
    printf("epoll after pipe write: %d first %llu\n", n, (unsigned long long)got[0].data.u64);
    char c;
    read(p[0], &c, 1);
    pthread_create(&t, NULL, send_later, NULL);
    n = epoll_wait(ep, got, 4, -1);
    printf("epoll after another thread's kill: %d first %llu\n", n, (unsigned long long)got[0].data.u64);
    pthread_join(t, NULL);
    take("read", fd, 1);
    show("epoll, nothing again", epoll_wait(ep, got, 4, 0));
    close(fd);

    // A child's SIGCHLD.
    fd = signalfd(-1, &chld, 0);
    pid_t child = fork();
    if (child == 0)
        _exit(3);
    struct signalfd_siginfo si;
    ssize_t r = read(fd, &si, sizeof si);
    printf("SIGCHLD read %zd signo %u code %d (CLD_EXITED %d) status %d pid-ok %d\n", r, si.ssi_signo, si.ssi_code,
           CLD_EXITED, si.ssi_status, si.ssi_pid == (unsigned)child);
    int status;
    waitpid(child, &status, 0);
    printf("child status %d\n", WEXITSTATUS(status));
    return 0;
}
