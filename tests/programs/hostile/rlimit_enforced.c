/* Resource limits the program sets are enforced, as on Linux:
 * - RLIMIT_NOFILE: new descriptors must be below the soft limit (EMFILE; dup2 to a number at or
 *   above it is EBADF, F_DUPFD from there EINVAL, poll of more descriptors EINVAL); raising it
 *   again (up to the hard limit) works; a forked child keeps it, and so does a program started
 *   with posix_spawn (a shell that prints `ulimit -n`).
 * - RLIMIT_FSIZE: a write that reaches the limit is cut there; one past it fails with EFBIG and
 *   raises SIGXFSZ in the writing thread before the call returns (a handler counts them), also
 *   pwrite and ftruncate; without a handler a forked child dies of it.
 * - RLIMIT_CORE 0/0 (`ulimit -c 0`): a started program has it too.
 * One line per case, the same natively and under hrt.
 * Usage: rlimit_enforced */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static volatile sig_atomic_t xfsz;
static void on_xfsz(int sig) { xfsz += sig == SIGXFSZ; }

static void descriptors(void) {
    /* Only 0, 1 and 2 open, whoever started us. */
    syscall(SYS_close_range, 3, ~0U, 0);
    struct rlimit l;
    getrlimit(RLIMIT_NOFILE, &l);
    struct rlimit low = {16, l.rlim_max};
    printf("NOFILE 16: %d\n", setrlimit(RLIMIT_NOFILE, &low));
    int last = -1, fd;
    while ((fd = open("/dev/null", O_RDONLY)) >= 0)
        last = fd;
    printf("opened up to fd %d, then errno %s\n", last, strerrorname_np(errno));
    close(last);
    errno = 0;
    int r = dup2(0, 16);
    printf("dup2 to 16: %d %s\n", r, strerrorname_np(errno));
    errno = 0;
    r = fcntl(0, F_DUPFD, 16);
    printf("F_DUPFD from 16: %d %s\n", r, strerrorname_np(errno));
    printf("F_DUPFD from 15: %d\n", fcntl(0, F_DUPFD, 15));
    struct pollfd p[17];
    for (int i = 0; i < 17; i++)
        p[i] = (struct pollfd){.fd = -1};
    errno = 0;
    r = poll(p, 17, 0);
    printf("poll of 17: %d %s\n", r, strerrorname_np(errno));
    printf("poll of 16: %d\n", poll(p, 16, 0));
    pid_t c = fork();
    if (c == 0) {
        errno = 0;
        int r = dup2(0, 20);
        printf("forked child: dup2 to 20: %d %s\n", r, strerrorname_np(errno));
        _exit(0);
    }
    waitpid(c, NULL, 0);
    syscall(SYS_close_range, 3, ~0U, 0);
    char *argv[] = {"sh", "-c", "echo started program: ulimit -n $(ulimit -n)", NULL};
    pid_t s;
    if (posix_spawn(&s, "/bin/sh", NULL, NULL, argv, environ) == 0)
        waitpid(s, NULL, 0);
    struct rlimit high = {64, l.rlim_max};
    printf("NOFILE 64: %d\n", setrlimit(RLIMIT_NOFILE, &high));
    errno = 0;
    r = dup2(0, 40);
    printf("dup2 to 40: %d %s\n", r, strerrorname_np(errno));
    struct rlimit over = {l.rlim_max, l.rlim_max == RLIM_INFINITY ? l.rlim_max : l.rlim_max + 1};
    errno = 0;
    r = setrlimit(RLIMIT_NOFILE, &over);
    printf("hard limit raised: %d %s\n", r, strerrorname_np(errno));
    setrlimit(RLIMIT_NOFILE, &l);
}

static void file_size(void) {
    char path[] = "/tmp/hrt-fsize-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        exit(1);
    unlink(path);
    signal(SIGXFSZ, on_xfsz);
    struct rlimit l = {10000, RLIM_INFINITY};
    printf("FSIZE 10000: %d\n", setrlimit(RLIMIT_FSIZE, &l));
    static char buf[8192];
    memset(buf, 'x', sizeof buf);
    ssize_t n = write(fd, buf, sizeof buf);
    printf("write 8192: %zd, signals %d\n", n, xfsz);
    n = write(fd, buf, sizeof buf);
    printf("write 8192 more: %zd, signals %d\n", n, xfsz);
    errno = 0;
    n = write(fd, buf, 1);
    printf("write at the limit: %zd %s, signals %d\n", n, strerrorname_np(errno), xfsz);
    errno = 0;
    n = pwrite(fd, buf, 10, 20000);
    printf("pwrite past the limit: %zd %s, signals %d\n", n, strerrorname_np(errno), xfsz);
    errno = 0;
    int r = ftruncate(fd, 20000);
    printf("ftruncate past the limit: %d %s, signals %d\n", r, strerrorname_np(errno), xfsz);
    printf("ftruncate below it: %d, signals %d\n", ftruncate(fd, 5000), xfsz);
    pid_t c = fork();
    if (c == 0) {
        signal(SIGXFSZ, SIG_DFL);
        pwrite(fd, buf, 10, 20000);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    printf("forked child without a handler: %s %d\n", WIFSIGNALED(st) ? "killed by" : "exited", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    struct rlimit none = {RLIM_INFINITY, RLIM_INFINITY};
    printf("FSIZE unlimited: %d\n", setrlimit(RLIMIT_FSIZE, &none));
    printf("pwrite at 20000 now: %zd, signals %d\n", pwrite(fd, buf, 10, 20000), xfsz);
}

/* `ulimit -c 0`: soft and hard core limits 0, which a started program inherits. */
static void core_limit(void) {
    struct rlimit none = {0, 0};
    printf("CORE 0/0: %d\n", setrlimit(RLIMIT_CORE, &none));
    char *argv[] = {"sh", "-c", "echo started program: core $(ulimit -Sc)/$(ulimit -Hc)", NULL};
    pid_t s;
    if (posix_spawn(&s, "/bin/sh", NULL, NULL, argv, environ) == 0)
        waitpid(s, NULL, 0);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    descriptors();
    file_size();
    core_limit();
    return 0;
}
