// SA_NOCLDSTOP: with it no SIGCHLD comes when a child stops or continues, only when it ends;
// without it one comes for each. Taken by sigtimedwait with
// SIGCHLD blocked (a handler, the default action), by a handler that runs, and in a forked
// child whose disposition came with the fork. Each stop and continue is waited for with
// waitpid (WUNTRACED, WCONTINUED), which SA_NOCLDSTOP leaves alone. Compared with the native run.
// A SIGCHLD that is to come is waited for up to 10 s (a loaded host may delay it); one that must
// not come is looked for only briefly (300 ms, 200 ms for the handler), as before.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t handled;
static void on_child(int s) {
    (void)s;
    handled++;
}

static void set_action(void (*h)(int), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = flags | SA_RESTART;
    sigaction(SIGCHLD, &sa, NULL);
}

// The SIGCHLD that came (SIGCHLD blocked), or "none": within 10 s if one is to come (`expect`),
// else within 300 ms.
static void taken(const char *what, int expect) {
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGCHLD);
    struct timespec ts = {expect ? 10 : 0, expect ? 0 : 300 * 1000 * 1000};
    int r = sigtimedwait(&s, NULL, &ts);
    if (r == SIGCHLD)
        printf("%-40s SIGCHLD\n", what);
    else
        printf("%-40s none\n", what);
}

static pid_t pausing_child(void) {
    pid_t c = fork();
    if (c == 0)
        for (;;)
            pause();
    return c;
}

static void stop(pid_t c) {
    int st;
    kill(c, SIGSTOP);
    waitpid(c, &st, WUNTRACED);
    if (!WIFSTOPPED(st))
        printf("not stopped: %#x\n", st);
}

static void cont(pid_t c) {
    int st;
    kill(c, SIGCONT);
    waitpid(c, &st, WCONTINUED);
    if (!WIFCONTINUED(st))
        printf("not continued: %#x\n", st);
}

static void end(pid_t c) {
    int st;
    kill(c, SIGKILL);
    waitpid(c, &st, 0);
}

// Stop, continue and kill a child, taking what each sends (`stops_signal`: without
// SA_NOCLDSTOP, where a stop and a continue send SIGCHLD).
static void blocked_round(const char *name, int stops_signal) {
    pid_t c = pausing_child();
    char what[64];
    stop(c);
    snprintf(what, sizeof what, "%s: stop", name);
    taken(what, stops_signal);
    cont(c);
    snprintf(what, sizeof what, "%s: continue", name);
    taken(what, stops_signal);
    end(c);
    snprintf(what, sizeof what, "%s: kill", name);
    taken(what, 1);
}

// `handled` once it reaches `want` (at most 10 s on); if it already has (no signal is to come),
// after 200 ms, time for one that must not come to show up.
static int handled_by(int want) {
    if (handled >= want) {
        usleep(200 * 1000);
        return handled;
    }
    for (int i = 0; i < 1000 && handled < want; i++)
        usleep(10 * 1000);
    return handled;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);

    set_action(on_child, SA_NOCLDSTOP);
    blocked_round("handler, SA_NOCLDSTOP", 0);
    set_action(on_child, 0);
    blocked_round("handler, no SA_NOCLDSTOP", 1);
    set_action(SIG_DFL, SA_NOCLDSTOP);
    blocked_round("default, SA_NOCLDSTOP", 0);
    set_action(on_child, SA_NOCLDSTOP);
    blocked_round("handler, SA_NOCLDSTOP again", 0);

    // A forked child keeps the disposition and its flag.
    pid_t mid = fork();
    if (mid == 0) {
        blocked_round("forked child, inherited SA_NOCLDSTOP", 0);
        _exit(0);
    }
    waitpid(mid, NULL, 0);
    taken("the forked child's end", 1);

    // A handler that runs: counted after each step (given time to arrive: see handled_by).
    sigprocmask(SIG_UNBLOCK, &chld, NULL);
    int flags[2] = {SA_NOCLDSTOP, 0};
    for (int i = 0; i < 2; i++) {
        set_action(on_child, flags[i]);
        handled = 0;
        pid_t c = pausing_child();
        int per_step = flags[i] != SA_NOCLDSTOP; // SIGCHLDs a stop and a continue send
        stop(c);
        int after_stop = handled_by(per_step);
        cont(c);
        int after_cont = handled_by(2 * per_step);
        end(c);
        int after_kill = handled_by(2 * per_step + 1);
        printf("handler runs%s: after stop %d, continue %d, kill %d\n", i == 0 ? " with SA_NOCLDSTOP" : "",
               after_stop, after_cont, after_kill);
    }
    return 0;
}
