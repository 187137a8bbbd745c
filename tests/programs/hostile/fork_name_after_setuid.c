/* A root program drops to nobody and forks: another process reading the child's name
 * (/proc/<pid>/comm, what ps and pgrep show) finds the program's name, as natively. Under hrt
 * the child was named `hrt-fork` (its hrt's fork thread): the forked hrt wrote the program's
 * name to /proc/self/comm, which is root's once the uid changed (postgres under
 * `setpriv --reuid`: `pgrep -x postgres` found 1 process of 7). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "become_nobody.h"

/* What a host process sees as pid's name: read by `cat`, a program of the host, since the
 * program's own reads of another hrt process's /proc files are the host's too. */
static void show_name(const char *who, pid_t pid) {
    char cmd[96];
    snprintf(cmd, sizeof cmd, "cat /proc/%d/comm", (int)pid);
    printf("%s: ", who);
    fflush(stdout);
    if (system(cmd) != 0)
        printf("(cat failed)\n");
}

int main(void) {
    int dropped = become_nobody();
    if (dropped)
        return dropped < 0 ? 0 : dropped;
    int go[2];
    if (pipe(go))
        return 1;
    pid_t c = fork();
    if (c == 0) {
        char b;
        close(go[1]);
        read(go[0], &b, 1); /* until the parent has looked */
        _exit(0);
    }
    close(go[0]);
    show_name("parent", getpid());
    show_name("child", c);
    close(go[1]);
    int st;
    waitpid(c, &st, 0);
    printf("child ended: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}
