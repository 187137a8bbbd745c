// Exec with bad arguments from a vfork child (the error comes back to the child, which exits
// with it), the program's own /proc/self/exe as the host program, and a process sharing its
// descriptor table (clone with CLONE_FILES, no CLONE_VM) refused.
// MODE "child": what the exec of /proc/self/exe runs. MODE "monitor-proc": exec of the
// monitor's own /proc/<pid>/exe (getpid(): the program's pid is hrt's), hrt only: it is the
// program's own /proc/self, so the program runs, never hrt. MODE "clone-files": that clone, twice.
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"

extern char **environ;

// vfork, then raw execve(path, argv, envp) in the child; prints how the child ended.
static void try_exec(const char *what, const char *path, char *const argv[], char *const envp[]) {
    pid_t pid = vfork();
    if (pid == 0) {
        long r = syscall(SYS_execve, path, argv, envp);
        _exit(r < 0 ? errno : 100);
    }
    int s;
    waitpid(pid, &s, 0);
    printf("%s: %s %d\n", what, WIFEXITED(s) ? "exited" : "killed by", WIFEXITED(s) ? WEXITSTATUS(s) : WTERMSIG(s));
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && !strcmp(argv[1], "child")) {
        printf("exe child: argc %d\n", argc);
        return 6;
    }
    if (argc > 1 && !strcmp(argv[1], "clone-files")) {
        report("clone-files", syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0));
        report("clone-files again", syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, 0, 0, 0));
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "monitor-proc")) {
        char p[64];
        snprintf(p, sizeof p, "/proc/%d/exe", (int)getpid());
        char *a[] = {"x", "child", NULL};
        try_exec("monitor's exe", p, a, environ);
        return 0;
    }
    char *a[] = {"/bin/true", NULL};
    try_exec("null path", NULL, a, environ);
    try_exec("path unmapped", (const char *)8, a, environ);
    try_exec("argv unmapped", "/bin/true", (char *const *)((long)argc * 8), environ);
    char *bad_arg[] = {"/bin/true", (char *)16, NULL};
    try_exec("argv entry unmapped", "/bin/true", bad_arg, environ);
    try_exec("envp unmapped", "/bin/true", a, (char *const *)((long)argc * 8));
    char *bad_env[] = {(char *)16, NULL};
    try_exec("envp entry unmapped", "/bin/true", a, bad_env);
    try_exec("empty path", "", a, environ);
    try_exec("not a directory", "/etc/passwd/x", a, environ);
    char *self[] = {"self", "child", NULL};
    try_exec("proc self exe", "/proc/self/exe", self, environ);
    return 0;
}
