/* fork() then execve in the child (what shells and pyenv's shims do): a dynamic host program
 * with its output through a pipe, the program itself (static or not) with the parent's pid as
 * its getppid, an exec that fails and returns its error, FD_CLOEXEC closed by the child's exec
 * only, and a MAP_SHARED file mapping and a System V segment the child writes and the parent
 * reads. One line per case;
 * no pid is printed, only relations between them.
 * Usage: procs_fork_exec [child PARENT_PID FD] (the second form: what the self-exec runs) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ended.h"

extern char **environ;

/* The child runs /bin/echo with its stdout on a pipe; the parent reads what it wrote. */
static void echo_through_a_pipe(void) {
    int fds[2];
    if (pipe(fds) != 0)
        return;
    pid_t p = fork();
    if (p == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        char *argv[] = {"echo", "from", "the", "child's", "echo", NULL};
        execve("/bin/echo", argv, environ);
        _exit(errno);
    }
    close(fds[1]);
    char buf[128] = {0};
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf - 1 && (n = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)n;
    close(fds[0]);
    printf("echo: read \"%.*s\", %s\n", (int)strcspn(buf, "\n"), buf, ended(p));
}

/* The child execs this program (argv[0]); it reports its parent and the descriptor it got. */
static void exec_self(const char *self) {
    int keep[2], closed[2];
    if (pipe(keep) != 0 || pipe2(closed, O_CLOEXEC) != 0)
        return;
    pid_t parent = getpid();
    pid_t p = fork();
    if (p == 0) {
        char pp[32], fd[32], cfd[32];
        snprintf(pp, sizeof pp, "%d", (int)parent);
        snprintf(fd, sizeof fd, "%d", keep[1]);
        snprintf(cfd, sizeof cfd, "%d", closed[1]);
        char *argv[] = {(char *)self, "child", pp, fd, cfd, NULL};
        execve(self, argv, environ);
        _exit(100 + errno);
    }
    close(keep[1]);
    close(closed[1]);
    char buf[8] = {0};
    ssize_t n = read(keep[0], buf, sizeof buf - 1);
    printf("self exec: child wrote %zd \"%s\", %s\n", n, n > 0 ? buf : "", ended(p));
    close(keep[0]);
    close(closed[0]);
}

static void failing_exec(void) {
    pid_t p = fork();
    if (p == 0) {
        char *argv[] = {"nowhere", NULL};
        execve("/nonexistent/program", argv, environ);
        _exit(errno);
    }
    printf("failing exec: %s (ENOENT is %d)\n", ended(p), ENOENT);
}

/* A MAP_SHARED file mapping stays shared with the file in the child, before and after the
 * child's exec replaced its memory (a host program then reads the file). */
static void shared_file_mapping(void) {
    char path[] = "/tmp/hrt-fork-exec-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, 4096) != 0)
        return;
    char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return;
    strcpy(m, "parent");
    pid_t p = fork();
    if (p == 0) {
        int saw = strcmp(m, "parent") == 0;
        strcpy(m, "child wrote this");
        char *argv[] = {"head", "-c", "16", path, NULL};
        if (saw)
            execve("/usr/bin/head", argv, environ);
        _exit(1);
    }
    const char *how = ended(p);
    printf("\nshared mapping: parent reads \"%s\", child %s\n", m, how);
    munmap(m, 4096);
    close(fd);
    unlink(path);
}

/* A System V segment attached before the fork stays shared with the child. */
static void sysv_segment(void) {
    int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
    char *m = id < 0 ? (char *)-1 : shmat(id, NULL, 0);
    if (id >= 0)
        shmctl(id, IPC_RMID, NULL);
    if (m == (char *)-1)
        return;
    strcpy(m, "parent");
    pid_t p = fork();
    if (p == 0) {
        strcpy(m, "child");
        _exit(0);
    }
    const char *how = ended(p);
    printf("System V segment: parent reads \"%s\", child %s\n", m, how);
    shmdt(m);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 5 && !strcmp(argv[1], "child")) {
        int fd = atoi(argv[3]);
        int ppid_ok = getppid() == atoi(argv[2]);
        int closed_gone = fcntl(atoi(argv[4]), F_GETFD) < 0 && errno == EBADF;
        const char *msg = ppid_ok ? "ppid" : "other";
        if (write(fd, msg, strlen(msg)) < 0)
            return 2;
        return closed_gone ? 6 : 7;
    }
    echo_through_a_pipe();
    exec_self(argv[0]);
    failing_exec();
    shared_file_mapping();
    sysv_segment();
    return 0;
}
