/* setpgid(child, getpid()) moves the child into the group whose id is the caller's pid: EPERM
 * while the caller leads no such group (hrt put the child in a group of its own and said 0),
 * allowed once the caller has made that group with setpgid(0, 0). Run in a forked child,
 * which never leads a group to begin with. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The children wait for the end of this pipe (closed once the checks are done), so they are
 * alive, not zombies, however slowly the parent gets to them. */
static int hold[2];

static pid_t sleeper(void) {
    pid_t c = fork();
    if (c == 0) {
        char b;
        close(hold[1]);
        while (read(hold[0], &b, 1) > 0)
            ;
        _exit(0);
    }
    return c;
}

int main(void) {
    fflush(stdout);
    pid_t a = fork();
    if (a == 0) {
        if (pipe(hold))
            return 1;
        pid_t c = sleeper();
        errno = 0;
        int r = setpgid(c, getpid());
        printf("not a group leader: setpgid(child, own pid) %d (%s), the child's group is ours %d, its own %d\n", r,
               strerror(errno), getpgid(c) == getpgrp(), getpgid(c) == c);
        setpgid(0, 0);
        pid_t d = sleeper();
        errno = 0;
        r = setpgid(d, getpid());
        printf("leading its group: setpgid(child, own pid) %d (%s), the child's group is ours %d\n", r, strerror(errno),
               getpgid(d) == getpid());
        fflush(stdout);
        close(hold[1]);
        waitpid(c, NULL, 0);
        waitpid(d, NULL, 0);
        _exit(0);
    }
    waitpid(a, NULL, 0);
    return 0;
}
