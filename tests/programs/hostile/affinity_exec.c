/* A program that sets its CPUs, then starts programs: as on Linux, an exec keeps the
 * affinity, after fork + execve and through posix_spawn alike (under hrt's default
 * `--children host` both children lost it: they got all of the host's CPUs). */
#define _GNU_SOURCE
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void show(const char *who) {
    cpu_set_t s;
    CPU_ZERO(&s);
    sched_getaffinity(0, sizeof s, &s);
    printf("%s: %d CPU(s), CPU 0 among them: %s\n", who, CPU_COUNT(&s), CPU_ISSET(0, &s) ? "yes" : "no");
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc > 1) {
        show(argv[1]);
        return 0;
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) {
        perror("sched_setaffinity");
        return 1;
    }
    show("the program");
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        execl("/proc/self/exe", argv[0], "after fork and execve", (char *)NULL);
        _exit(127);
    }
    waitpid(p, NULL, 0);
    char *spawned[] = {argv[0], "spawned", NULL};
    if (posix_spawn(&p, "/proc/self/exe", NULL, NULL, spawned, environ) == 0)
        waitpid(p, NULL, 0);
    printf("affinity exec: done\n");
    return 0;
}
