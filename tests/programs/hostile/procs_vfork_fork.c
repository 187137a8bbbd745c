/* fork() from a vfork child before its exec: the new process is a copy of the vfork child
 * (the memory it shares with its parent at that moment, its own descriptors, working directory
 * and signal actions), the vfork child waits for it and passes its status on; the parent keeps
 * its own descriptors, directory and actions. Then a grandchild that execs. One line per
 * fact, no pids.
 * Usage: procs_vfork_fork [sharing]   (sharing: clone without CLONE_VM but with CLONE_FILES,
 * which hrt refuses with ENOSYS; printed, not compared) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ended.h"

static volatile int marker = 1;

/* Writes `text` to `fd` with one write (no stdio in a vfork child). */
static void say(int fd, const char *text) {
    if (write(fd, text, strlen(text)) < 0)
        _exit(99);
}

/* The grandchild, forked by the vfork child: reports what it inherited on `out` (fd 5). */
static void grandchild(void) {
    char buf[256], cwd[256];
    const char *dir = getcwd(cwd, sizeof cwd) ? strrchr(cwd, '/') + 1 : "?";
    snprintf(buf, sizeof buf, "grandchild: marker %d, directory %s, fd 5 %s\n", marker,
             strncmp(dir, "hrt-vfork-fork-", 15) == 0 ? "the child's" : dir,
             fcntl(5, F_GETFD) >= 0 ? "open" : "closed");
    say(5, buf);
    marker = 100; /* the grandchild's own copy */
    raise(SIGUSR1); /* ignored by the vfork child, so here too */
    say(5, "grandchild: survived SIGUSR1\n");
    _exit(7);
}

static void sharing(void) {
    long r = syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0);
    if (r == 0)
        _exit(0);
    if (r > 0)
        printf("clone(CLONE_FILES): child %s\n", ended(r));
    else
        printf("clone(CLONE_FILES): errno %d\n", errno);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "sharing") == 0) {
        sharing();
        return 0;
    }
    char dir[] = "/tmp/hrt-vfork-fork-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    int p[2];
    if (pipe(p))
        return 1;
    fflush(stdout);
    pid_t child = vfork();
    if (child == 0) {
        /* The vfork child: its own fd 5, directory and SIGUSR1 action; a store the parent
         * sees (shared memory); then a fork. */
        if (dup2(p[1], 5) != 5 || chdir(dir))
            _exit(98);
        signal(SIGUSR1, SIG_IGN);
        marker = 2;
        pid_t g = fork();
        if (g == 0)
            grandchild();
        if (g < 0) {
            char buf[64];
            snprintf(buf, sizeof buf, "child: fork failed, errno %d\n", errno);
            say(5, buf);
            _exit(97);
        }
        int st = 0;
        pid_t w = waitpid(g, &st, 0);
        char buf[128];
        snprintf(buf, sizeof buf, "child: waited for the grandchild: %s, status %d\n", w == g ? "yes" : "no",
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        say(5, buf);
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) + 10 : 96);
    }
    printf("vfork child: %s\n", child > 0 ? ended(child) : "vfork failed");
    close(p[1]);
    char got[1024] = {0};
    size_t n = 0;
    ssize_t r;
    while (n < sizeof got - 1 && (r = read(p[0], got + n, sizeof got - 1 - n)) > 0)
        n += r;
    printf("%s", got);
    printf("parent: marker %d (the vfork child's store)\n", marker);
    printf("parent: fd 5 %s\n", fcntl(5, F_GETFD) >= 0 ? "open" : "closed");
    char cwd[256];
    printf("parent: directory unchanged: %s\n",
           getcwd(cwd, sizeof cwd) && strcmp(cwd, dir) != 0 ? "yes" : "no");
    struct sigaction sa;
    sigaction(SIGUSR1, NULL, &sa);
    printf("parent: SIGUSR1 default: %s\n", sa.sa_handler == SIG_DFL ? "yes" : "no");

    /* A grandchild that execs: echo's output arrives. */
    fflush(stdout);
    child = vfork();
    if (child == 0) {
        pid_t g = fork();
        if (g == 0) {
            execl("/bin/echo", "echo", "grandchild exec'd echo", (char *)NULL);
            _exit(127);
        }
        int st = 0;
        waitpid(g, &st, 0);
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 96);
    }
    printf("vfork child of the exec: %s\n", ended(child));
    rmdir(dir);
    return 0;
}
