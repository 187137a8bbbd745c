/* kill(0), kill(-pgrp), a grandchild's kill, signals from another process (real-time ones
 * included), and SIGCHLD ignored or SA_NOCLDWAIT: each as Linux does it. Synchronised with
 * pipes and waits only. The program first makes a process group of its own, so that kill(0)
 * reaches only it and its children.
 *
 * With the argument "minus1" it runs only kill(-1), which on Linux signals every process the
 * caller may signal: natively run it only in a PID namespace of its own
 * (`unshare --pid --fork --mount-proc`), never as root on a host. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got[65];
static void on(int s) { got[s]++; }

static void handle(int s) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on;
    sigaction(s, &sa, 0);
}

/* A child that waits (with `s` blocked until then) for signal `s` and exits 7 once it came. */
static pid_t waiter(int s, int own_group, int ready[2]) {
    pid_t p = fork();
    if (p == 0) {
        if (own_group)
            setpgid(0, 0);
        sigset_t none;
        sigemptyset(&none);
        close(ready[0]);
        write(ready[1], "r", 1);
        while (!got[s])
            sigsuspend(&none);
        _exit(7);
    }
    char c;
    close(ready[1]);
    read(ready[0], &c, 1);
    close(ready[0]);
    return p;
}

static int status_of(pid_t p) {
    int st = 0;
    if (waitpid(p, &st, 0) != p)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Blocks `s` here and starts a waiter for it (in a group of its own if `own_group`). */
static pid_t blocked_with_waiter(int s, int own_group) {
    sigset_t blk;
    sigemptyset(&blk);
    sigaddset(&blk, s);
    sigprocmask(SIG_BLOCK, &blk, 0);
    got[s] = 0;
    int ready[2];
    pipe(ready);
    return waiter(s, own_group, ready);
}

/* Whether `s` is pending here; then unblocks it (its handler runs). */
static int pending_then_unblocked(int s) {
    sigset_t pend, blk;
    sigpending(&pend);
    sigemptyset(&blk);
    sigaddset(&blk, s);
    sigprocmask(SIG_UNBLOCK, &blk, 0);
    return sigismember(&pend, s);
}

static void group_case(const char *what, int use_zero) {
    int s = SIGUSR1;
    pid_t c = blocked_with_waiter(s, 0);
    int r = kill(use_zero ? 0 : -getpgrp(), s);
    int pending_here = pending_then_unblocked(s);
    printf("%s: kill %d, own copy pending before return %d, handled %d, child status %d\n", what, r,
           pending_here, (int)got[s], status_of(c));
}

static void minus1(void);

int main(int argc, char **argv) {
    setvbuf(stdout, 0, _IONBF, 0);
    if (setpgid(0, 0) != 0 && getpgrp() != getpid()) {
        perror("setpgid");
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "minus1") == 0) {
        minus1();
        return 0;
    }
    handle(SIGUSR1);
    handle(SIGUSR2);
    handle(SIGRTMIN + 1);
    handle(SIGURG);
    handle(SIGPROF);
    handle(SIGCHLD);

    group_case("kill(0)", 1);
    group_case("kill(-pgrp)", 0);

    /* A grandchild: its grandparent may signal it. */
    {
        int ready[2], pids[2];
        pipe(pids);
        pid_t c = fork();
        if (c == 0) {
            close(pids[0]);
            sigset_t blk;
            sigemptyset(&blk);
            sigaddset(&blk, SIGUSR2);
            sigprocmask(SIG_BLOCK, &blk, 0);
            got[SIGUSR2] = 0;
            pipe(ready);
            pid_t g = waiter(SIGUSR2, 0, ready);
            write(pids[1], &g, sizeof g);
            _exit(status_of(g));
        }
        close(pids[1]);
        pid_t g = 0;
        read(pids[0], &g, sizeof g);
        int r = kill(g, SIGUSR2);
        printf("grandchild: kill %d, child's status (the grandchild's) %d\n", r, status_of(c));
    }

    /* Signals from another process: a child signals its parent (real-time, SIGURG, SIGPROF). */
    {
        sigset_t blk, old;
        sigemptyset(&blk);
        sigaddset(&blk, SIGRTMIN + 1);
        sigaddset(&blk, SIGURG);
        sigaddset(&blk, SIGPROF);
        sigprocmask(SIG_BLOCK, &blk, &old);
        pid_t c = fork();
        if (c == 0) {
            pid_t pp = getppid();
            _exit(kill(pp, SIGRTMIN + 1) | kill(pp, SIGURG) | kill(pp, SIGPROF));
        }
        int st = status_of(c);
        /* Delivery to another process is asynchronous: wait for all three (up to 20 s). */
        for (int n = 0; n < 10000; n++) {
            sigset_t pend;
            sigpending(&pend);
            if (sigismember(&pend, SIGRTMIN + 1) && sigismember(&pend, SIGURG) && sigismember(&pend, SIGPROF))
                break;
            usleep(2000);
        }
        sigprocmask(SIG_SETMASK, &old, 0);
        printf("from a child: status %d, got rt %d urg %d prof %d\n", st, (int)got[SIGRTMIN + 1], (int)got[SIGURG],
               (int)got[SIGPROF]);
    }

    /* SIGCHLD with SA_NOCLDWAIT: a handler runs, no zombie stays. */
    {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on;
        sa.sa_flags = SA_NOCLDWAIT;
        sigaction(SIGCHLD, &sa, 0);
        got[SIGCHLD] = 0;
        pid_t c = fork();
        if (c == 0)
            _exit(3);
        int st, r = waitpid(-1, &st, 0);
        int e = errno;
        while (!got[SIGCHLD])
            usleep(1000);
        printf("SA_NOCLDWAIT: wait %s (%s), handled %d\n", r == -1 ? "failed" : "returned a child",
               r == -1 ? strerror(e) : "-", got[SIGCHLD] > 0);
        /* Again with the parent surely asleep in the wait when the child ends: the SIGCHLD
         * and the end of the children come together; Linux answers ECHILD, not EINTR. */
        got[SIGCHLD] = 0;
        c = fork();
        if (c == 0) {
            usleep(50000);
            _exit(3);
        }
        r = waitpid(-1, &st, 0);
        e = errno;
        while (!got[SIGCHLD])
            usleep(1000);
        printf("SA_NOCLDWAIT, late child: wait %s (%s), handled %d\n", r == -1 ? "failed" : "returned a child",
               r == -1 ? strerror(e) : "-", got[SIGCHLD] > 0);
    }

    /* SIGCHLD ignored: no zombie; wait fails with ECHILD once the children are gone. */
    {
        signal(SIGCHLD, SIG_IGN);
        pid_t c = fork();
        if (c == 0)
            _exit(3);
        int st, r = waitpid(-1, &st, 0);
        int e = errno;
        printf("SIG_IGN: wait %s (%s)\n", r == -1 ? "failed" : "returned a child", r == -1 ? strerror(e) : "-");
        /* Back to default: a child is a zombie again. */
        signal(SIGCHLD, SIG_DFL);
        c = fork();
        if (c == 0)
            _exit(4);
        printf("SIG_DFL again: status %d\n", status_of(c));
    }
    return 0;
}

/* kill(-1): reaches a child in a group of its own; not the caller. */
static void minus1(void) {
    handle(SIGUSR2);
    int s = SIGUSR2;
    pid_t c = blocked_with_waiter(s, 1);
    int r = kill(-1, s);
    int mine = pending_then_unblocked(s);
    printf("kill(-1): kill %d, caller signalled %d, child status %d\n", r, mine + (int)got[s], status_of(c));
}
