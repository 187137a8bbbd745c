// A child blocks every signal it can and has a handler for each; its parent sends it every
// signal (kill, 1-64 but SIGKILL, SIGSTOP, SIGCHLD, SIGALRM and glibc's 32 and 33), as LTP's
// sighold02 does; the child then prints what is pending. On Linux a stop signal sent drops a
// pending SIGCONT (and SIGCONT the stop signals): SIGCONT, sent before SIGTSTP, is not pending.
// Under hrt the signals reach the child's kernel through its monitor and may come a little
// after the parent's message: the child waits (up to 10 s) for the set to stop growing. The
// monitor's handlers once nested a frame per signal on their small alternate stack and the
// host killed the child with SIGSEGV: the pass-on handler of the fault signals, and (with a
// shared file mapping, which this program makes first) the SIGBUS handler of guest copies.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int handled;
static void on_signal(int sig) {
    (void)sig;
    handled++;
}

static int skipped(int sig) {
    return (sig >= 32 && sig < SIGRTMIN) || sig == SIGCHLD || sig == SIGKILL || sig == SIGALRM || sig == SIGSTOP;
}

static void print_set(const char *what, const sigset_t *set) {
    printf("%s:", what);
    for (int s = 1; s < 65; s++)
        if (sigismember(set, s) == 1)
            printf(" %d", s);
    printf("\n");
}

static int expected_count(void) {
    int n = 0;
    for (int s = 1; s < 65; s++)
        n += !skipped(s) && s != SIGCONT;
    return n;
}

int main(void) {
    // A shared file mapping: its pages may vanish, so the monitor catches SIGBUS too.
    FILE *backing = tmpfile();
    if (!backing || ftruncate(fileno(backing), 4096) != 0)
        return 6;
    volatile char *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(backing), 0);
    if (shared == MAP_FAILED)
        return 7;
    shared[0] = 1;
    int ready[2], go[2];
    if (pipe(ready) || pipe(go))
        return 1;
    pid_t c = fork();
    if (c == 0) {
        sigset_t all;
        sigemptyset(&all);
        for (int s = 1; s < 65; s++)
            if (!skipped(s)) {
                signal(s, on_signal);
                sigaddset(&all, s);
            }
        sigprocmask(SIG_BLOCK, &all, NULL);
        if (write(ready[1], "r", 1) != 1)
            _exit(2);
        char b;
        if (read(go[0], &b, 1) != 1)
            _exit(3);
        sigset_t pending;
        for (int i = 0; i < 1000; i++) {
            sigpending(&pending);
            int n = 0;
            for (int s = 1; s < 65; s++)
                n += sigismember(&pending, s) == 1;
            if (n >= expected_count())
                break;
            struct timespec ten_ms = {0, 10000000};
            nanosleep(&ten_ms, NULL);
        }
        print_set("child: pending", &pending);
        printf("child: handlers run while blocked: %d\n", handled);
        fflush(stdout);
        _exit(0);
    }
    char b;
    if (read(ready[0], &b, 1) != 1)
        return 4;
    for (int s = 1; s < 65; s++)
        if (!skipped(s))
            kill(c, s);
    if (write(go[1], "g", 1) != 1)
        return 5;
    int st;
    waitpid(c, &st, 0);
    if (WIFEXITED(st))
        printf("child exited %d\n", WEXITSTATUS(st));
    else
        printf("child killed by signal %d\n", WTERMSIG(st));
    printf("signals_all_blocked: done\n");
    return 0;
}
