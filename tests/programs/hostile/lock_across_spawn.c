/* A POSIX lock (F_SETLK) stays its owner's while a vfork child, posix_spawn's file actions or
 * Go's exec, dup2s the locked file's descriptor and execs (Go's syscall TestFcntlFlock): the
 * exec'd program finds the range locked by the parent, and so does a checker started after it
 * ended. Under hrt the vfork child's dup2 made a host descriptor in `hrt`'s own process, and
 * closing it when the child's table went released the parent's lock (the host releases a
 * process's POSIX locks when it closes any descriptor of the file). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The checker: is [0, 10) of the file at descriptor 3 (or the path) locked by pid `owner`? */
static int check(const char *path, pid_t owner, int use_fd3) {
    int fd = use_fd3 ? 3 : open(path, O_RDWR);
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10};
    if (fd < 0 || fcntl(fd, F_GETLK, &l) != 0)
        return 2;
    return l.l_type == F_WRLCK && l.l_pid == owner ? 0 : 1;
}

static int run_checker(char *self, const char *path, int use_fd3, int lockfd, int how) {
    char owner[16];
    snprintf(owner, sizeof owner, "%d", getpid());
    char *argv[] = {self, "check", (char *)path, owner, use_fd3 ? "3" : "path", NULL};
    pid_t c;
    if (how == 0) {
        c = vfork();
        if (c == 0) {
            if (use_fd3)
                dup2(lockfd, 3);
            execv(self, argv);
            _exit(3);
        }
    } else {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        if (use_fd3)
            posix_spawn_file_actions_adddup2(&fa, lockfd, 3);
        if (posix_spawn(&c, self, &fa, NULL, argv, environ) != 0)
            return 4;
    }
    int status;
    waitpid(c, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 5;
}

int main(int argc, char **argv) {
    if (argc == 5 && strcmp(argv[1], "check") == 0)
        return check(argv[2], atoi(argv[3]), strcmp(argv[4], "3") == 0);
    char path[] = "/tmp/hrt-lock-XXXXXX";
    int fd = mkstemp(path);
    /* Away from 3, which the children use. */
    int lockfd = fcntl(fd, F_DUPFD_CLOEXEC, 10);
    close(fd);
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10};
    if (lockfd < 0 || fcntl(lockfd, F_SETLK, &l) != 0)
        return 1;
    const char *how[] = {"vfork + dup2 + exec", "posix_spawn with adddup2"};
    for (int h = 0; h < 2; h++) {
        printf("%s: the child finds it locked by us: %s\n", how[h], run_checker(argv[0], path, 1, lockfd, h) == 0 ? "yes" : "no");
        printf("%s: locked by us after the child: %s\n", how[h], run_checker(argv[0], path, 0, lockfd, h) == 0 ? "yes" : "no");
    }
    unlink(path);
    printf("lock across spawn: done\n");
    return 0;
}
