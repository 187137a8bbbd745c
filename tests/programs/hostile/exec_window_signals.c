/* Signals sent to a forked child while it execs a program (right after the fork, as timeout(1)
 * or a shell's `kill $!` do) act on the new program as on Linux: SIGTERM ends it, a blocked
 * SIGUSR1 is pending in it. Under hrt the forked child's exec starts a host program in its
 * place, and a signal that came while it did went to a kernel that had already sent the
 * program's pending signals: lost in 3-5 rounds of 60 (the program ran on). */
#define _GNU_SOURCE
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pause_us(long us) {
    struct timespec d = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&d, 0);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "sleeper")) {
        pause_us(3000000);
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "waiter")) {
        /* SIGUSR1 is blocked (the mask survives the exec): pending already or soon. */
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGUSR1);
        struct timespec t = {3, 0};
        return sigtimedwait(&s, 0, &t) == SIGUSR1 ? 0 : 1;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return 2;
    self[n] = 0;
    int killed = 0, rounds = 40;
    for (int i = 0; i < rounds; i++) {
        pid_t p = fork();
        if (p == 0) {
            execl(self, self, "sleeper", (char *)0);
            _exit(127);
        }
        pause_us(i * 200);
        kill(p, SIGTERM);
        int st;
        waitpid(p, &st, 0);
        killed += WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM;
    }
    printf("SIGTERM around the exec: %d of %d children ended by it\n", killed, rounds);
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    int received = 0;
    /* Blocked before the fork: the child has it blocked from its start. */
    sigprocmask(SIG_BLOCK, &usr1, 0);
    for (int i = 0; i < rounds; i++) {
        pid_t p = fork();
        if (p == 0) {
            execl(self, self, "waiter", (char *)0);
            _exit(127);
        }
        pause_us(i * 200);
        kill(p, SIGUSR1);
        int st;
        waitpid(p, &st, 0);
        received += WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    printf("blocked SIGUSR1 around the exec: %d of %d children had it pending\n", received, rounds);
    return 0;
}
