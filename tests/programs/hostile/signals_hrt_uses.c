// Signals another process sends reach the program, also those a monitor may use itself: the
// fault signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP), SIGABRT, SIGPIPE, SIGSYS, glibc's
// internal 32 and 33, and a real-time signal (SIGRTMIN+2). A forked child with handlers gets
// each with its siginfo (SI_USER or SI_QUEUE, the sender's pid, the value); children without
// handlers die of each signal, as `kill -SIG` from a shell makes them. Compared with the native
// run.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

// The kernel's sigaction (glibc's refuses 32 and 33): only the handler matters here.
struct kernel_sigaction {
    unsigned long handler, flags, restorer, mask;
};

// Whether `sig` is ignored, asked with the raw call.
static int ignored(int sig) {
    struct kernel_sigaction old;
    memset(&old, 0, sizeof old);
    syscall(SYS_rt_sigaction, sig, NULL, &old, 8);
    return old.handler == (unsigned long)SIG_IGN;
}

static volatile sig_atomic_t got_sig, got_code, got_pid, got_value;

static void on_signal(int sig, siginfo_t *si, void *ctx) {
    (void)ctx;
    got_sig = sig;
    got_code = si->si_code;
    got_pid = si->si_pid;
    got_value = si->si_code == SI_QUEUE ? si->si_value.sival_int : -1;
}

static const int caught[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT, SIGPIPE, SIGSYS, 0};

// The child with handlers: says it is ready, then reports each signal it takes, until SIGTERM.
static void handling_child(int report) {
    sigset_t all, none;
    sigemptyset(&all);
    sigemptyset(&none);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO;
    for (int i = 0; caught[i]; i++) {
        sigaction(caught[i], &sa, NULL);
        sigaddset(&all, caught[i]);
    }
    sigaction(SIGRTMIN + 2, &sa, NULL);
    sigaddset(&all, SIGRTMIN + 2);
    sigprocmask(SIG_BLOCK, &all, NULL);
    char line[160];
    int n = snprintf(line, sizeof line, "ready\n");
    write(report, line, n);
    for (;;) {
        got_sig = 0;
        while (!got_sig)
            sigsuspend(&none);
        pid_t parent = getppid();
        n = snprintf(line, sizeof line, "sig %d code %s pid %s value %d\n", (int)got_sig,
                     got_code == SI_USER ? "SI_USER" : got_code == SI_QUEUE ? "SI_QUEUE" : "other",
                     got_pid == parent ? "parent's" : "other", (int)got_value);
        write(report, line, n);
    }
}

static void read_line(FILE *from, const char *what) {
    char line[160];
    if (!fgets(line, sizeof line, from)) {
        printf("%s: no report\n", what);
        exit(1);
    }
    printf("%-22s %s", what, line);
}

// A child without handlers that waits in pause(): what `sig` from this process does to it.
static void dies_of(int sig) {
    int ready[2];
    if (pipe(ready) != 0)
        exit(1);
    pid_t c = fork();
    if (c == 0) {
        close(ready[0]);
        write(ready[1], "r", 1);
        for (;;)
            pause();
    }
    close(ready[1]);
    char b;
    if (read(ready[0], &b, 1) != 1)
        printf("sig %d: child not ready\n", sig);
    close(ready[0]);
    kill(c, sig);
    int status;
    waitpid(c, &status, 0);
    if (WIFSIGNALED(status))
        printf("no handler, sig %-3d  killed by %d\n", sig, WTERMSIG(status));
    else
        printf("no handler, sig %-3d  exited %d\n", sig, WEXITSTATUS(status));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    // A program started by glibc's posix_spawn (Rust's Command, the test harness) starts with
    // 32 and 33 ignored, one started by a shell does not; either way, as natively. Then every
    // signal used here gets its default action (the raw call for 32 and 33), whatever the
    // starter left ignored (Python ignores SIGPIPE).
    printf("at start: 32 %s, 33 %s\n", ignored(32) ? "ignored" : "default", ignored(33) ? "ignored" : "default");
    struct kernel_sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    for (int sig = 1; sig <= SIGRTMIN + 2; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            syscall(SYS_rt_sigaction, sig, &dfl, NULL, 8);
    int p[2];
    if (pipe(p) != 0)
        return 1;
    pid_t c = fork();
    if (c == 0) {
        close(p[0]);
        handling_child(p[1]);
    }
    close(p[1]);
    FILE *from = fdopen(p[0], "r");
    read_line(from, "child");
    char what[40];
    for (int i = 0; caught[i]; i++) {
        kill(c, caught[i]);
        snprintf(what, sizeof what, "kill %s", strsignal(caught[i]));
        read_line(from, what);
    }
    union sigval v = {.sival_int = 77};
    sigqueue(c, SIGSEGV, v);
    read_line(from, "sigqueue SIGSEGV");
    v.sival_int = 78;
    sigqueue(c, SIGRTMIN + 2, v);
    read_line(from, "sigqueue SIGRTMIN+2");
    kill(c, SIGRTMIN + 2);
    read_line(from, "kill SIGRTMIN+2");
    kill(c, SIGTERM);
    int status;
    waitpid(c, &status, 0);
    printf("handling child: %s %d\n", WIFSIGNALED(status) ? "killed by" : "exited",
           WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    int defaults[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT, SIGPIPE, SIGSYS, 32, 33, 0};
    for (int i = 0; defaults[i]; i++)
        dies_of(defaults[i]);
    dies_of(SIGRTMIN + 2);
    return 0;
}
