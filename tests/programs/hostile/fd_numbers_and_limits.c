// Descriptor numbers against RLIMIT_NOFILE and the table, as Linux has them:
// - the soft limit bounds the numbers of new descriptors, not how many are open: with 3-29
//   open, 8 closed and the limit lowered to 20, an open gets 8 (hrt said EMFILE);
// - select looks as far as the process's descriptor table reaches (Linux's max_fds, which
//   grows with the highest descriptor made), not the soft limit: a ready fd 41 above a lowered
//   limit is seen (hrt ignored it) and a closed fd 35 below the table's end is EBADF (hrt: 0),
//   and a bit for a closed fd 1023 beyond the table is ignored (hrt: EBADF);
// - with no number free, an open of a missing name is EMFILE (the number is taken before the
//   walk), not ENOENT;
// - a dup2 that fails (a closed source) leaves a signalfd target as it was (hrt then took it
//   for the eventfd behind it).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

static void said(const char *what, long r) {
    printf("%-32s %ld %s\n", what, r, r < 0 ? strerror(errno) : "");
}

static int beyond_the_table(void) {
    int p[2];
    if (pipe(p))
        return 1;
    fd_set w;
    struct timeval now = {0, 0};
    FD_ZERO(&w);
    FD_SET(p[1], &w);
    FD_SET(1023, &w);
    said("select closed 1023 past table", select(1024, 0, &w, 0, &now));
    FD_ZERO(&w);
    FD_SET(p[1], &w);
    FD_SET(40, &w);
    said("select closed 40 in table", select(1024, 0, &w, 0, &now));
    return 0;
}

static int failed_dup2_keeps_signalfd(void) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR1);
    sigprocmask(SIG_BLOCK, &s, 0);
    int fd = signalfd(-1, &s, SFD_NONBLOCK);
    said("dup2 closed source onto signalfd", dup2(52, fd));
    said("signalfd update", signalfd(fd, &s, SFD_NONBLOCK) == fd ? 0 : -1);
    raise(SIGUSR1);
    struct signalfd_siginfo si;
    memset(&si, 0, sizeof si);
    long n = read(fd, &si, sizeof si);
    printf("signalfd read %ld signal %u\n", n, si.ssi_signo);
    close(fd);
    return 0;
}

static int lowered_limit(void) {
    int q[2];
    if (pipe(q))
        return 1;
    dup2(q[1], 41);
    for (int i = 3; i < 30; i++)
        dup2(0, i);
    close(8);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = 20;
    setrlimit(RLIMIT_NOFILE, &rl);
    int fd = open("/dev/null", O_RDONLY);
    said("open under a lowered limit", fd);
    said("dup with none free below it", dup(0));
    fd_set w;
    struct timeval now = {0, 0};
    FD_ZERO(&w);
    FD_SET(41, &w);
    long r = select(42, 0, &w, 0, &now);
    printf("select ready 41 above the limit %ld set %d\n", r, FD_ISSET(41, &w));
    FD_ZERO(&w);
    FD_SET(35, &w);
    said("select closed 35 above the limit", select(36, 0, &w, 0, &now));
    said("open missing with none free", open("/nonexistent-hrt-test-file", O_RDONLY));
    return 0;
}

int main(void) {
    // Each part in a child of its own, so that the tables do not meet.
    int (*parts[])(void) = {beyond_the_table, failed_dup2_keeps_signalfd, lowered_limit};
    for (unsigned i = 0; i < sizeof parts / sizeof *parts; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
        {
            int r = parts[i]();
            fflush(stdout);
            _exit(r);
        }
        int st;
        waitpid(pid, &st, 0);
        printf("part %u ended %d\n", i, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    }
    printf("fd numbers and limits: done\n");
    return 0;
}
