// Signals between processes of one tree carry their siginfo, as on Linux: sigqueue to a forked
// child arrives with SI_QUEUE, the sender's pid and uid and the value (a standard and a
// real-time signal), kill with SI_USER and the sender's pid; the SIGCHLD of a forked child
// that exits or is killed, and of a spawned host program (/bin/sh), says CLD_EXITED or
// CLD_KILLED with the child's pid and status. Compared with the native run.
#define _GNU_SOURCE
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static const char *code_name(int code) {
    switch (code) {
    case SI_USER:
        return "SI_USER";
    case SI_QUEUE:
        return "SI_QUEUE";
    case SI_TKILL:
        return "SI_TKILL";
    case CLD_EXITED:
        return "CLD_EXITED";
    case CLD_KILLED:
        return "CLD_KILLED";
    case CLD_DUMPED:
        return "CLD_DUMPED";
    default:
        return "other";
    }
}

// One signal taken with sigwaitinfo: its code, whether the pid is `from`, the uid ours, and
// (for SI_QUEUE) the value.
static void take(const char *what, const sigset_t *set, pid_t from) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int sig = sigwaitinfo(set, &si);
    printf("%-28s sig %d, %s, pid %s, uid %s", what, sig, code_name(si.si_code), si.si_pid == from ? "sender's" : "other",
           si.si_uid == getuid() ? "ours" : "other");
    if (si.si_code == SI_QUEUE)
        printf(", value %d", si.si_value.sival_int);
    printf("\n");
}

// The SIGCHLD of child `c`, then its reaping.
static void child_ended(const char *what, const sigset_t *chld, pid_t c) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int sig = sigwaitinfo(chld, &si);
    printf("%-28s sig %d, %s, pid %s, status %d\n", what, sig, code_name(si.si_code), si.si_pid == c ? "the child's" : "other",
           si.si_status);
    waitpid(c, NULL, 0);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    sigset_t set, chld;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigaddset(&set, SIGRTMIN);
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigset_t all = set;
    sigaddset(&all, SIGCHLD);
    sigprocmask(SIG_BLOCK, &all, NULL);

    // sigqueue and kill to a forked child, each signal taken there.
    int ready[2], done[2];
    pipe(ready);
    pipe(done);
    pid_t parent = getpid();
    pid_t c = fork();
    if (c == 0) {
        write(ready[1], "r", 1);
        char x;
        read(done[0], &x, 1); // all three sent
        // Each is pending once it is sent on Linux; under hrt they travel through the child's
        // monitor: wait (at most 10 s) until all three are, so that they are taken in order.
        for (int i = 0; i < 1000; i++) {
            sigset_t pending;
            sigpending(&pending);
            if (sigismember(&pending, SIGUSR1) && sigismember(&pending, SIGUSR2) && sigismember(&pending, SIGRTMIN))
                break;
            usleep(10 * 1000);
        }
        take("child: SIGUSR1 by kill", &set, parent);
        take("child: SIGUSR2 by sigqueue", &set, parent);
        take("child: SIGRTMIN by sigqueue", &set, parent);
        _exit(0);
    }
    char x;
    read(ready[0], &x, 1);
    printf("sigqueue SIGRTMIN: %d\n", sigqueue(c, SIGRTMIN, (union sigval){.sival_int = 42}));
    printf("sigqueue SIGUSR2: %d\n", sigqueue(c, SIGUSR2, (union sigval){.sival_int = 7}));
    printf("kill SIGUSR1: %d\n", kill(c, SIGUSR1));
    write(done[1], "d", 1);
    child_ended("parent: SIGCHLD, exit 0", &chld, c);

    // A forked child that exits with 3, one killed by SIGTERM.
    c = fork();
    if (c == 0)
        _exit(3);
    child_ended("parent: SIGCHLD, exit 3", &chld, c);
    c = fork();
    if (c == 0) {
        signal(SIGTERM, SIG_DFL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        kill(getpid(), SIGTERM);
        pause();
        _exit(1);
    }
    child_ended("parent: SIGCHLD, SIGTERM", &chld, c);

    // A host program: /bin/sh exiting with 5.
    char *argv[] = {"sh", "-c", "exit 5", NULL};
    if (posix_spawn(&c, "/bin/sh", NULL, NULL, argv, environ) != 0) {
        puts("posix_spawn failed");
        return 1;
    }
    child_ended("parent: SIGCHLD, sh exit 5", &chld, c);
    return 0;
}
