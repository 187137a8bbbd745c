/* Prints what another process sees of us (ps): our comm and cmdline from the host's /proc, read
   by a spawned `cat` (a host program), after start, after PR_SET_NAME, in a forked child, and
   after an exec of ourselves with "again". */
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
static void seen(const char *when) {
    char path[64], cmd[64];
    snprintf(path, sizeof path, "/proc/%d/comm", getpid());
    snprintf(cmd, sizeof cmd, "/proc/%d/cmdline", getpid());
    printf("%s: comm ", when);
    fflush(stdout);
    char *argv[] = {"cat", path, 0};
    pid_t p;
    posix_spawnp(&p, "cat", 0, 0, argv, environ);
    waitpid(p, 0, 0);
    printf("%s: cmdline ", when);
    fflush(stdout);
    char *argv2[] = {"sh", "-c", "tr '\\0' ' ' < $0 | sed 's/ *$//'; echo", cmd, 0};
    posix_spawnp(&p, "sh", 0, 0, argv2, environ);
    waitpid(p, 0, 0);
}
int main(int argc, char **argv) {
    setvbuf(stdout, 0, _IONBF, 0);
    if (argc > 1 && strcmp(argv[1], "again") == 0) {
        seen("after exec");
        return 0;
    }
    seen("start");
    prctl(PR_SET_NAME, "renamed");
    seen("after PR_SET_NAME");
    pid_t c = fork();
    if (c == 0) {
        seen("forked child");
        _exit(0);
    }
    waitpid(c, 0, 0);
    execl("/proc/self/exe", "names", "again", "x", (char *)0);
    return 1;
}
