// Signals a program ignores stay ignored in the programs it execs, glibc's own two included:
// signals 32 and 33 (which glibc's sigaction refuses; a program sets them with the raw
// rt_sigaction, or a libc that does not keep them), and 40. Checked in a program exec'd after a
// fork, one started by posix_spawn and one by system(): each prints its SigIgn line. (hrt's
// monitor set dispositions for the exec with glibc's sigaction, which refused 32 and 33.)
#define _GNU_SOURCE
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct kernel_sigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    unsigned long mask;
};

int main(void) {
    struct kernel_sigaction ign = {SIG_IGN, 0, 0, 0};
    int sigs[] = {32, 33, 40};
    for (int i = 0; i < 3; i++)
        if (syscall(SYS_rt_sigaction, sigs[i], &ign, NULL, 8) != 0)
            perror("rt_sigaction");
    char *grep[] = {"grep", "SigIgn", "/proc/self/status", NULL};
    setvbuf(stdout, NULL, _IONBF, 0);

    printf("after fork and exec: ");
    pid_t c = fork();
    if (c == 0) {
        execvp("grep", grep);
        _exit(127);
    }
    waitpid(c, NULL, 0);

    printf("posix_spawn: ");
    if (posix_spawnp(&c, "grep", NULL, NULL, grep, environ) == 0)
        waitpid(c, NULL, 0);

    printf("system: ");
    if (system("grep SigIgn /proc/self/status") != 0)
        printf("system failed\n");
    return 0;
}
