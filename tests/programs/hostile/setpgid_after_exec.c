// setpgid on a child: allowed before the child calls execve, EACCES after it, as on Linux
// (under hrt a forked child's exec happens in its own VM, not on the host). A child that
// exec'd may still set its own group. Compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHOW_WIDTH 40
#include "show.h"

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 2 && !strcmp(argv[1], "execd")) {
        // The exec'd child: says so on the pipe, moves itself, waits for the parent's word.
        int ready = argv[2][0] - '0', go = argv[2][1] - '0';
        show("exec'd child: setpgid(0, 0) on itself", setpgid(0, 0));
        show("exec'd child: its group is its pid", getpgid(0) == getpid());
        write(ready, "e", 1);
        char c;
        read(go, &c, 1);
        return 0;
    }
    int ready[2], go[2];
    pipe(ready);
    pipe(go);
    // Before the exec: the parent may move the child.
    pid_t c = fork();
    if (c == 0) {
        char c1;
        read(go[0], &c1, 1);
        char fds[3] = {'0' + ready[1], '0' + go[0], 0};
        execl("/proc/self/exe", argv[0], "execd", fds, (char *)NULL);
        _exit(127);
    }
    show("before exec: setpgid(child, child)", setpgid(c, c));
    show("before exec: child's group is its pid", getpgid(c) == c);
    write(go[1], "g", 1);
    char x;
    read(ready[0], &x, 1); // the child has exec'd
    show("after exec: setpgid(child, child)", setpgid(c, c));
    show("after exec: setpgid(child, own group)", setpgid(c, getpgrp()));
    show("after exec: child's group still its pid", getpgid(c) == c);
    write(go[1], "g", 1);
    int st;
    waitpid(c, &st, 0);
    show("child's status", st);
    show("after reaping: setpgid(child, child)", setpgid(c, c));
    return 0;
}
