/* A blocking write that writes part of its data and then meets the end of its readers: on a
 * pipe Linux sends SIGPIPE although the write returns the count it wrote; on a socket it does
 * not; a short write that a signal ended while the reader is still there sends none. Each
 * case runs in a child, whose end (status or signal) and whether the handlers ran are printed.
 * The alarm comes every 200 ms until the write ends: a single one could come before the write
 * on a loaded host, which then waited for good. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEN (1 << 20)
static volatile sig_atomic_t pipes, alarms;
static void on_pipe(int s) { (void)s; pipes++; }
static void on_alarm(int s) { (void)s; alarms++; }

/* The reader: `n` bytes, then its end (with `n` < 0: none, until the writer ends it). */
static void reader(int fd, long n) {
    static char b[65536];
    if (n < 0)
        for (;;)
            pause();
    while (n > 0) {
        ssize_t r = read(fd, b, n < (long)sizeof b ? (size_t)n : sizeof b);
        if (r <= 0)
            break;
        n -= r;
    }
    _exit(0);
}

/* The writer's side of one case; exits with 0 if the write was short, 1 if not. */
static void writer(int kind, int handle) {
    int fd[2];
    if (kind == 2 ? socketpair(AF_UNIX, SOCK_STREAM, 0, fd) : pipe(fd))
        exit(3);
    struct sigaction sa = {0};
    sa.sa_handler = handle ? on_pipe : SIG_DFL;
    sigaction(SIGPIPE, &sa, NULL);
    sa.sa_handler = on_alarm; /* no SA_RESTART: the alarm ends the blocked write */
    sigaction(SIGALRM, &sa, NULL);
    pid_t r = fork();
    if (r == 0) {
        close(fd[1]);
        reader(fd[0], kind == 1 ? -1 : 100000);
    }
    close(fd[0]);
    char *buf = calloc(1, LEN);
    if (kind == 1)
        ualarm(200000, 200000);
    ssize_t w = write(fd[1], buf, LEN);
    int e = errno;
    if (kind == 1)
        ualarm(0, 0);
    if (kind == 1)
        kill(r, SIGTERM);
    waitpid(r, NULL, 0);
    printf("  write: %s, short %d, SIGPIPE handled %d, SIGALRM handled %d\n", w < 0 ? strerror(e) : "a count",
           w > 0 && w < LEN, pipes > 0, alarms > 0);
    fflush(stdout);
    exit(w > 0 && w < LEN ? 0 : 1);
}

int main(void) {
    const char *names[] = {"pipe, reader leaves", "pipe, an alarm ends the write", "socket, reader leaves"};
    for (int kind = 0; kind < 3; kind++) {
        for (int handle = 1; handle >= 0; handle--) {
            printf("%s, SIGPIPE %s:\n", names[kind], handle ? "handled" : "default");
            fflush(stdout);
            pid_t w = fork();
            if (w == 0)
                writer(kind, handle);
            int st;
            waitpid(w, &st, 0);
            if (WIFSIGNALED(st))
                printf("  ended by signal %d\n", WTERMSIG(st));
            else
                printf("  exit %d\n", WEXITSTATUS(st));
        }
    }
    return 0;
}
