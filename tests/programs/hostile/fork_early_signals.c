// Signals sent to a child the moment fork returns, before it has run anything: the child has
// its parent's dispositions from the start, so a handler catches them (the child goes on), a
// default action ends it by the signal, and an ignored one does nothing. Under hrt the child
// is a new VM that takes a few milliseconds to start: these signals arrive while it does.
// Counts each outcome over repeated forks.
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>

static volatile sig_atomic_t got;
static void on_usr1(int s) {
    (void)s;
    got = 1;
}

// Forks `n` children that run `child` and sends each `sig` at once; prints how they ended.
static void round_of(const char *what, int n, int sig, void (*child)(void)) {
    int exited = 0, by_signal = 0, other = 0;
    for (int i = 0; i < n; i++) {
        pid_t c = fork();
        if (c == 0) {
            child();
            _exit(0);
        }
        kill(c, sig);
        int st;
        waitpid(c, &st, 0);
        if (WIFEXITED(st) && WEXITSTATUS(st) == 7)
            exited++;
        else if (WIFSIGNALED(st) && WTERMSIG(st) == sig)
            by_signal++;
        else
            other++;
    }
    printf("%s: went on %d, ended by the signal %d, other %d\n", what, exited, by_signal, other);
}

// Waits for the handler, then ends with 7.
static void wait_for_handler(void) {
    while (!got)
        usleep(100);
    _exit(7);
}

// Waits for a signal to end it (the default action's round: no timing involved).
static void wait_for_end(void) {
    for (;;)
        pause();
}

// Sleeps a little, then ends with 7 (the ignored signal's round: it ends the same whenever
// the signal comes).
static void sleep_then_exit(void) {
    usleep(20000);
    _exit(7);
}

int main(void) {
    signal(SIGUSR1, on_usr1);
    round_of("caught", 20, SIGUSR1, wait_for_handler);
    round_of("default action", 5, SIGTERM, wait_for_end);
    signal(SIGUSR2, SIG_IGN);
    round_of("ignored", 5, SIGUSR2, sleep_then_exit);
    printf("fork early signals: done\n");
    return 0;
}
