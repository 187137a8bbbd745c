/* A root program lowers RLIMIT_NPROC to 8 and starts a copy of itself, which drops to nobody
 * (where the limit starts to apply), starts a thread and reads from a pipe that thread writes
 * into a second later. RLIMIT_NPROC counts host threads, and under `hrt --children hrt` the
 * copy's hrt has a dozen of its own: it could not start the worker thread for the blocking
 * read and left the read waiting for good. `hrt` lifts its own limit where the host lets it
 * (CAP_SYS_RESOURCE), and else the read fails with EAGAIN and an `hrt:` line. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "become_nobody.h"

extern char **environ;

static int pipe_fds[2];

static void *writer(void *arg) {
    (void)arg;
    sleep(1);
    write(pipe_fds[1], "x", 1);
    return NULL;
}

static int copy(void) {
    if (become_nobody()) /* the copy of a root program: root */
        return 1;
    if (pipe(pipe_fds))
        return 1;
    pthread_t t;
    int e = pthread_create(&t, NULL, writer, NULL);
    printf("pthread_create: %s\n", strerror(e));
    char c = 0;
    ssize_t r = read(pipe_fds[0], &c, 1);
    if (r == 1)
        printf("read: 1 byte, %c\n", c);
    else
        printf("read: %s\n", strerror(errno));
    if (!e)
        pthread_join(t, NULL);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1)
        return copy();
    if (geteuid() != 0) {
        printf("needs root\n");
        return 0;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    struct rlimit rl = {8, 8};
    if (setrlimit(RLIMIT_NPROC, &rl)) {
        perror("setrlimit");
        return 1;
    }
    char *args[] = {argv[0], "copy", NULL};
    pid_t p;
    int e = posix_spawn(&p, "/proc/self/exe", NULL, NULL, args, environ);
    int st = 0;
    if (!e)
        waitpid(p, &st, 0);
    printf("the copy: spawn %s, status %d\n", strerror(e), WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}
