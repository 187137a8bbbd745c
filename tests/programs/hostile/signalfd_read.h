// Looking at a signalfd the way the signalfd_* programs print it: whether it polls readable, and
// one read's result (bytes and signal number, or the error) on one aligned line. A program sets
// SHOW_WIDTH (and includes show.h) before including this.
#ifndef HOSTILE_SIGNALFD_READ_H
#define HOSTILE_SIGNALFD_READ_H
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#ifndef SHOW_WIDTH
#define SHOW_WIDTH 36
#endif

// Whether `fd` polls readable within `ms` milliseconds: 1 or 0, or -1 if poll failed.
static int readable(int fd, int ms) {
    struct pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, ms);
    return r < 0 ? -1 : (r == 1 && (p.revents & POLLIN));
}

// One read: the number of bytes and the signal, or the error.
static void take(const char *what, int fd) {
    struct signalfd_siginfo si;
    memset(&si, 0, sizeof si);
    ssize_t n = read(fd, &si, sizeof si);
    if (n < 0)
        printf("%-*s -1 %s\n", SHOW_WIDTH, what, strerror(errno));
    else
        printf("%-*s %zd bytes, sig %u\n", SHOW_WIDTH, what, n, si.ssi_signo);
}

#endif
