/* A signal that reaches a process before its child ends interrupts the process's wait for the
 * child, as on Linux: timeout(1) and a shell's Ctrl-C signal a whole process group, parent
 * first, and make's handler expects to find its children still there.
 * A helper process waits until the parent says it is about to wait and then until the parent
 * sleeps (/proc/PID/status State: S, so that it waits: a loaded host can delay it by hundreds
 * of ms; at most ~5 s of looking, and 50 ms more where State tells nothing:
 * under hrt it is the host process's), sends SIGTERM to the parent, waits until the parent's copy has left the pending
 * set (/proc/PID/status ShdPnd: the signal has been taken, by Linux's parent or by `hrt`'s
 * host handler), and only then kills the child. Linux's wait has ended
 * with EINTR by then, or restarts and returns the child under SA_RESTART. hrt's kernel took
 * the host's signal later than the child's end reached the monitor, so its wait returned the
 * child first; make then printed "wait: No child processes". */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "proc_state.h"

static volatile sig_atomic_t handled;

static void on_term(int sig) {
    (void)sig;
    handled++;
}

/* Whether `sig` is pending for process `pid` (its shared pending set). */
static int pending(pid_t pid, int sig) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    unsigned long long set = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "ShdPnd: %llx", &set) == 1)
            break;
    fclose(f);
    return (set >> (sig - 1)) & 1;
}

/* Whether process `pid` sleeps (state S). */
static int sleeping(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    return sleeps(path);
}

/* Starts the child to wait for (it pauses until killed) and the helper that signals the
 * parent, then the child, in that order. */
static pid_t start(pid_t *helper, int *go) {
    int p[2];
    if (pipe(p) != 0)
        exit(1);
    pid_t child = fork();
    if (child == 0) {
        for (;;)
            pause();
    }
    pid_t parent = getpid();
    *helper = fork();
    if (*helper == 0) {
        char c;
        close(p[1]);
        if (read(p[0], &c, 1) != 1)
            _exit(1);
        for (int i = 0; i < 5000 && !sleeping(parent); i++)
            usleep(1000);
        usleep(50000);
        kill(parent, SIGTERM);
        while (pending(parent, SIGTERM))
            usleep(100);
        kill(child, SIGKILL);
        _exit(0);
    }
    close(p[0]);
    *go = p[1];
    return child;
}

/* Waits for the child with `how` (0: wait4, 1: waitid); rounds where the wait ended as Linux
 * ends it: EINTR without SA_RESTART, the killed child with it. */
static int rounds(int how, int restart, int n) {
    struct sigaction sa = {0};
    sa.sa_handler = on_term;
    sa.sa_flags = restart ? SA_RESTART : 0;
    sigaction(SIGTERM, &sa, NULL);
    int good = 0, again = 0;
    for (int r = 0; r < n; r++) {
        handled = 0;
        int go;
        pid_t helper, child = start(&helper, &go);
        int st = 0, got_child;
        long rc;
        if (write(go, "w", 1) != 1)
            exit(1);
        close(go);
        /* A signal already taken (the helper saw no sleep to wait for: under hrt): the round
         * is made again, at most n times in all. */
        int early = handled != 0;
        if (how == 0) {
            rc = waitpid(child, &st, 0);
            got_child = rc == child && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
        } else {
            siginfo_t si;
            memset(&si, 0, sizeof si);
            rc = waitid(P_PID, child, &si, WEXITED);
            got_child = rc == 0 && si.si_pid == child && si.si_code == CLD_KILLED;
        }
        int err = errno;
        if (early && again < n) {
            again++;
            if (!got_child)
                waitpid(child, &st, 0);
            waitpid(helper, &st, 0);
            r--;
            continue;
        }
        int ok = handled == 1 && (restart ? got_child : rc == -1 && err == EINTR);
        good += ok;
        if (!ok)
            printf("round %d: answer %ld (%s), handler ran %d times\n", r, rc, rc < 0 ? strerror(err) : "a child",
                   (int)handled);
        if (!got_child)
            waitpid(child, &st, 0);
        waitpid(helper, &st, 0);
    }
    return good;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    const int n = 10;
    printf("wait4 without SA_RESTART: EINTR in %d of %d rounds\n", rounds(0, 0, n), n);
    printf("waitid without SA_RESTART: EINTR in %d of %d rounds\n", rounds(1, 0, n), n);
    printf("wait4 with SA_RESTART: the child in %d of %d rounds\n", rounds(0, 1, n), n);
    printf("waitid with SA_RESTART: the child in %d of %d rounds\n", rounds(1, 1, n), n);
    return 0;
}
