/* A process group whose members have all ended and been reaped is empty: kill(-pgid, sig)
 * answers ESRCH, as Linux's does. Under hrt a group that had held a forked hrt child still
 * answered 0 (its VM's teardown holder, which outlives the program, was in the group), so a
 * program that looks whether a job is gone thought it was still there. A child killed as it
 * started (LTP's kill11) could also leave a helper of its `hrt` in the group, a zombie that
 * init had to reap. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void report(const char *what, pid_t group) {
    errno = 0;
    int r = kill(-group, 0);
    printf("%s: kill(-group, 0) %d (%s)\n", what, r, r ? strerror(errno) : "someone is there");
}

/* Forks a child that leads a process group of its own and runs `body` there (which never
 * returns); the parent puts it in that group too (whichever comes first) and gets its pid. */
static pid_t group_leader(void (*body)(void)) {
    pid_t c = fork();
    if (c == 0) {
        setpgid(0, 0);
        body();
    }
    setpgid(c, c);
    return c;
}

static void end_at_once(void) { _exit(0); }

static void reap_own_child_then_end(void) {
    int st;
    pid_t g = fork();
    if (g == 0)
        _exit(0);
    waitpid(g, &st, 0);
    _exit(0);
}

/* Kills each of its children as soon as it is forked, as LTP's kill11 does, and reaps it. */
static void kill_children_as_they_start(void) {
    int st;
    for (int i = 0; i < 40; i++) {
        pid_t k = fork();
        if (k == 0) {
            pause();
            _exit(0);
        }
        kill(k, i % 2 ? SIGTERM : SIGKILL);
        waitpid(k, &st, 0);
    }
    _exit(0);
}

static void wait_for_signals(void) {
    for (;;)
        pause();
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int st;
    /* A group of one child. */
    pid_t a = group_leader(end_at_once);
    waitpid(a, &st, 0);
    report("a child's group after its end", a);

    /* A group of a child and its own child (the leader reaps it before it ends). */
    pid_t b = group_leader(reap_own_child_then_end);
    waitpid(b, &st, 0);
    report("a group of two after both ended", b);

    /* A group whose leader killed its children as they started. */
    pid_t k = group_leader(kill_children_as_they_start);
    waitpid(k, &st, 0);
    report("a group whose children were killed at their start", k);

    /* A group with a live member answers, and a signal reaches it. */
    pid_t c = group_leader(wait_for_signals);
    report("a group with a live member", c);
    kill(-c, SIGTERM);
    waitpid(c, &st, 0);
    printf("its member ended by SIGTERM: %d\n", WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    report("that group after its end", c);
    return 0;
}
