/* ioctls hrt answered ENOTTY without asking the host, and a signal that came late. TIOCSIG on
 * a pseudo-terminal master signals the slave's foreground group (a child that made the slave
 * its terminal); TIOCNOTTY by a session leader sends its group SIGHUP, which must end it
 * before the ioctl returns to it (under hrt the program ran on, and an `_exit` right after
 * came first in 15-35 % of runs: 40 rounds here); FIGETBSZ and FIOQSIZE answer for any file;
 * an epoll instance answers an unknown request with EINVAL (Linux 6.9), not ENOTTY; vhangup(2)
 * and TIOCVHANGUP hang up the caller's terminal (SIGHUP to its session, then reads end: 0)
 * where hrt said ENOSYS and ENOTTY. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scratch.h"

#define FIGETBSZ 2
#define FIOQSIZE 0x5460

static volatile sig_atomic_t got;
static void on_signal(int sig) { got = sig; }

static int open_master(char *slave, size_t size) {
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) || unlockpt(m) || ptsname_r(m, slave, size))
        exit(1);
    return m;
}

static void tiocsig(void) {
    char name[64];
    int m = open_master(name, sizeof name), ready[2];
    if (pipe(ready))
        exit(1);
    pid_t c = fork();
    if (c == 0) {
        signal(SIGINT, on_signal);
        setsid();
        if (open(name, O_RDWR) < 0) /* its controlling terminal: it is the foreground group */
            _exit(1);
        if (write(ready[1], "x", 1) != 1)
            _exit(1);
        for (int i = 0; i < 2000 && !got; i++)
            usleep(5000);
        _exit(got);
    }
    char x;
    if (read(ready[0], &x, 1) != 1)
        exit(1);
    int r = ioctl(m, TIOCSIG, SIGINT);
    int e = r < 0 ? errno : 0;
    int bad = ioctl(m, TIOCSIG, 0) < 0 ? errno : 0;
    int st;
    waitpid(c, &st, 0);
    printf("TIOCSIG: %d (%s), the child got signal %d; TIOCSIG 0: %s\n", r, strerror(e),
           WIFEXITED(st) ? WEXITSTATUS(st) : -1, strerror(bad));
    close(m);
}

static void tiocnotty(void) {
    int ran_on = 0, hung_up = 0;
    for (int round = 0; round < 40; round++) {
        char name[64];
        int m = open_master(name, sizeof name);
        pid_t c = fork();
        if (c == 0) {
            setsid();
            int s = open(name, O_RDWR);
            if (s < 0)
                _exit(2);
            ioctl(s, TIOCNOTTY); /* a session leader's: SIGHUP and SIGCONT to its group */
            _exit(3);
        }
        int st;
        waitpid(c, &st, 0);
        ran_on += WIFEXITED(st) && WEXITSTATUS(st) == 3;
        hung_up += WIFSIGNALED(st) && WTERMSIG(st) == SIGHUP;
        close(m);
    }
    printf("TIOCNOTTY: the leader died of SIGHUP in %d of 40 rounds, ran on after it in %d\n", hung_up, ran_on);
}

static volatile sig_atomic_t hangups;
static void on_hangup(int sig) { (void)sig, hangups++; }

static void hang_up(int request) {
    char name[64];
    int m = open_master(name, sizeof name);
    pid_t c = fork();
    if (c == 0) {
        setsid();
        int s = open(name, O_RDWR | O_NONBLOCK);
        signal(SIGHUP, on_hangup);
        errno = 0;
        int r = request ? ioctl(s, TIOCVHANGUP) : vhangup();
        int e = errno;
        char b[4];
        errno = 0;
        ssize_t n = read(s, b, sizeof b);
        printf("%s: %d (%s), SIGHUPs %d, then a read %zd (%s)\n", request ? "TIOCVHANGUP" : "vhangup", r,
               strerror(e), hangups, n, strerror(errno));
        _exit(0);
    }
    waitpid(c, NULL, 0);
    close(m);
}

static void file_requests(void) {
    int f = open("file", O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (f < 0 || write(f, "abc", 3) != 3)
        exit(1);
    int p[2];
    if (pipe(p))
        exit(1);
    int bs = -1, pbs = -1;
    long long q = -1;
    int r1 = ioctl(f, FIGETBSZ, &bs), r2 = ioctl(p[0], FIGETBSZ, &pbs), r3 = ioctl(f, FIOQSIZE, &q);
    printf("FIGETBSZ: file %d (size > 0: %d), pipe %d (size > 0: %d); FIOQSIZE %d (> 0: %d)\n", r1, bs > 0, r2,
           pbs > 0, r3, q > 0);
    errno = 0;
    int fq = ioctl(p[0], FIOQSIZE, &q) < 0 ? errno : 0;
    printf("FIOQSIZE of a pipe: %s\n", strerror(fq));
    int ep = epoll_create1(0);
    errno = 0;
    int r = ioctl(ep, 0x1234, 0);
    printf("unknown request on epoll: %d (%s)", r, strerror(errno));
    errno = 0;
    r = ioctl(p[0], 0x1234, 0);
    printf(", on a pipe: %d (%s)\n", r, strerror(errno));
    unlink("file");
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    char dir[] = "/tmp/hrt-ioctls-XXXXXX";
    if (enter_scratch(dir))
        return 1;
    tiocsig();
    tiocnotty();
    hang_up(0);
    hang_up(1);
    file_requests();
    rmdir(dir);
    return 0;
}
