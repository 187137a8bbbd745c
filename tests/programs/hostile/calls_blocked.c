// A blocked signal sent to oneself stays pending (the program carries on) and acts when
// unblocked; one that becomes ignored while pending is dropped.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    kill(getpid(), SIGTERM);
    syscall(SYS_tgkill, getpid(), gettid(), SIGUSR1);
    printf("still running after kill and tgkill\n");
    sigset_t pending;
    sigpending(&pending);
    printf("pending: SIGTERM %d SIGUSR1 %d SIGINT %d\n", sigismember(&pending, SIGTERM),
           sigismember(&pending, SIGUSR1), sigismember(&pending, SIGINT));
    signal(SIGUSR1, SIG_IGN);
    sigpending(&pending);
    printf("after SIG_IGN: SIGUSR1 %d\n", sigismember(&pending, SIGUSR1));
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_UNBLOCK, &usr1, NULL);
    printf("SIGUSR1 unblocked: still running\n");
    fflush(stdout);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    printf("not reached: SIGTERM was pending\n");
    return 0;
}
