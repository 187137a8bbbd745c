// Writes "y" lines to stdout until a write fails, like `yes`; the test reads one line and
// closes the pipe. MODE: default (dies of SIGPIPE, 141), ignore (SIG_IGN: the write fails with
// EPIPE, exit 3), blocked (EPIPE, exit 3 after checking SIGPIPE is pending... then unblocking
// it kills: 141), handler (a handler is installed: EPIPE after it, exit 3).
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static void on_pipe(int sig) { (void)sig; }

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "default";
    if (!strcmp(mode, "ignore"))
        signal(SIGPIPE, SIG_IGN);
    if (!strcmp(mode, "handler"))
        signal(SIGPIPE, on_pipe);
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    if (!strcmp(mode, "blocked"))
        sigprocmask(SIG_BLOCK, &pipe_set, NULL);
    for (;;) {
        if (write(1, "y\n", 2) < 0) {
            int e = errno;
            if (!strcmp(mode, "blocked")) {
                sigset_t pending;
                sigpending(&pending);
                if (e != EPIPE || !sigismember(&pending, SIGPIPE))
                    return 4;
                sigprocmask(SIG_UNBLOCK, &pipe_set, NULL);
                return 5; // not reached: the pending SIGPIPE ends the program
            }
            return e == EPIPE ? 3 : 4;
        }
    }
}
