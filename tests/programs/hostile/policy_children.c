/* SCHED_BATCH and SCHED_IDLE are kept by the program's children, exec'd or spawned, and another
 * process reads them for the program's pid, as on Linux. Under hrt the kernel kept the policy
 * for the program's own calls only: a host program started by a forked child or posix_spawn
 * ran SCHED_OTHER, and `chrt -p` of the program's pid said SCHED_OTHER. */
#define _GNU_SOURCE
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void wait_for(pid_t p) {
    int st;
    waitpid(p, &st, 0);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 2 && !strcmp(argv[1], "child")) {
        printf("%s: policy %d\n", argv[2], sched_getscheduler(0));
        return 0;
    }
    if (argc > 2 && !strcmp(argv[1], "look")) {
        printf("another process reads the program's policy: %d\n", sched_getscheduler(atoi(argv[2])));
        return 0;
    }
    struct sched_param p = {0};
    int policies[] = {SCHED_BATCH, SCHED_IDLE};
    for (int i = 0; i < 2; i++) {
        printf("sched_setscheduler(%d): %d\n", policies[i], sched_setscheduler(0, policies[i], &p));
        pid_t c = fork();
        if (c == 0) {
            execl("/proc/self/exe", argv[0], "child", "a forked child's exec", (char *)0);
            _exit(127);
        }
        wait_for(c);
        char *spawned[] = {argv[0], "child", "a spawned child", NULL};
        if (posix_spawn(&c, "/proc/self/exe", NULL, NULL, spawned, environ) == 0)
            wait_for(c);
        char pid[16];
        snprintf(pid, sizeof pid, "%d", (int)getpid());
        char *look[] = {argv[0], "look", pid, NULL};
        if (posix_spawn(&c, "/proc/self/exe", NULL, NULL, look, environ) == 0)
            wait_for(c);
    }
    printf("back to SCHED_OTHER: %d\n", sched_setscheduler(0, SCHED_OTHER, &p));
    return 0;
}
