/* sched_setaffinity of another process, as LTP's sched_setaffinity01 checks it: allowed to
 * root (hrt accepts it and leaves the other process's mask, saying so once on stderr), EPERM
 * for a child that became another user (nobody) and lost CAP_SYS_NICE, ESRCH for a pid no
 * process has. hrt accepted the other user's change. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, int r) {
    printf("%s: %s\n", what, r == 0 ? "ok" : strerror(errno));
    fflush(stdout);
}

int main(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    pid_t parent = getpid();
    pid_t c = fork();
    if (c == 0) {
        show("child as root, the parent's mask", sched_setaffinity(parent, sizeof set, &set));
        if (setuid(65534) != 0)
            _exit(2);
        show("child as nobody, the parent's mask", sched_setaffinity(parent, sizeof set, &set));
        show("child as nobody, its own mask", sched_setaffinity(0, sizeof set, &set));
        _exit(0);
    }
    int status;
    waitpid(c, &status, 0);
    show("a pid no process has", sched_setaffinity(0x3ffffff0, sizeof set, &set));
    printf("affinity of others: done, child %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
