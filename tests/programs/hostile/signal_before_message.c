// A signal another process sends is pending in the receiver before kill() (or sigqueue())
// returns. So when the sender then writes a message, the receiver that reads the message
// finds the signal already there: its handler has run by the time read() returns, sigpending()
// lists a blocked one, a sigtimedwait() that does not wait takes it. Under hrt the signal
// reaches the child's `hrt` on the host, whose kernel got it whenever a host thread of `hrt`
// got to it: on a busy host after the read had returned (the handler ran late, sigpending
// missed it). The parent plays rounds of four kinds, each a signal then a byte naming the
// kind; the child checks each and answers; the parent prints what went wrong, if anything.
// Then SIGTERM, left at its default action, to a child waiting in read(), then the byte: the
// child ends before read() returns.
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 400

static volatile int handled;
static void on_usr1(int sig) {
    (void)sig;
    handled++;
}

// One round of the child: checks what the kind `k` says must be there already, and answers
// '.' when it is, or a letter naming what was missing.
static char check(char k, int round) {
    sigset_t pending, usr2, rt;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    sigemptyset(&rt);
    sigaddset(&rt, SIGRTMIN + 3);
    struct timespec none = {0, 0};
    siginfo_t info;
    static int expected_handled;
    switch (k) {
    case 'h':
        // The handler ran before read() returned.
        expected_handled++;
        return handled == expected_handled ? '.' : 'H';
    case 'p':
        // Pending, as sigpending() shows; then taken.
        sigpending(&pending);
        if (sigismember(&pending, SIGUSR2) != 1)
            return 'P';
        return sigtimedwait(&usr2, &info, &none) == SIGUSR2 ? '.' : 'p';
    case 't':
        // A sigtimedwait() that does not wait finds it.
        return sigtimedwait(&usr2, &info, &none) == SIGUSR2 ? '.' : 'T';
    case 'q':
        // A queued real-time signal, with the round as its value.
        sigpending(&pending);
        if (sigismember(&pending, SIGRTMIN + 3) != 1)
            return 'Q';
        if (sigtimedwait(&rt, &info, &none) != SIGRTMIN + 3)
            return 'q';
        return info.si_value.sival_int == round ? '.' : 'v';
    }
    return '?';
}

int main(void) {
    int go[2], back[2];
    if (pipe(go) || pipe(back))
        return 1;
    // Blocked before the fork: the child has it blocked from its start.
    sigset_t blocked;
    sigemptyset(&blocked);
    sigaddset(&blocked, SIGUSR2);
    sigaddset(&blocked, SIGRTMIN + 3);
    sigprocmask(SIG_BLOCK, &blocked, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGUSR1, &sa, NULL);
    pid_t c = fork();
    if (c < 0)
        return 2;
    if (c == 0) {
        for (int round = 0; round < ROUNDS; round++) {
            char k;
            if (read(go[0], &k, 1) != 1)
                _exit(3);
            char a = check(k, round);
            if (write(back[1], &a, 1) != 1)
                _exit(4);
        }
        _exit(0);
    }
    const char kinds[] = "hptq";
    int wrong[256] = {0};
    for (int round = 0; round < ROUNDS; round++) {
        char k = kinds[round % 4];
        if (k == 'h') {
            kill(c, SIGUSR1);
        } else if (k == 'q') {
            union sigval v = {.sival_int = round};
            sigqueue(c, SIGRTMIN + 3, v);
        } else {
            kill(c, SIGUSR2);
        }
        char a;
        if (write(go[1], &k, 1) != 1 || read(back[0], &a, 1) != 1)
            return 5;
        wrong[(unsigned char)a]++;
        if (a != '.') {
            // Let a late signal come before the next round, so that rounds stay apart.
            struct timespec ms = {0, 20000000};
            nanosleep(&ms, NULL);
        }
    }
    int status;
    waitpid(c, &status, 0);
    printf("child: %s %d\n", WIFEXITED(status) ? "exited" : "killed", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    // A signal whose default action ends the receiver, sent while it waits in read(), then the
    // message: it ends before read() returns, so it never says it read (10 rounds).
    int read_anyway = 0, not_killed = 0;
    for (int round = 0; round < 10; round++) {
        int go2[2], back2[2];
        if (pipe(go2) || pipe(back2))
            return 6;
        pid_t v = fork();
        if (v == 0) {
            signal(SIGTERM, SIG_DFL);
            char k;
            if (write(back2[1], "r", 1) != 1 || read(go2[0], &k, 1) != 1)
                _exit(7);
            (void)!write(back2[1], "m", 1);
            _exit(0);
        }
        close(back2[1]);
        char r;
        if (read(back2[0], &r, 1) != 1)
            return 8;
        struct timespec wait_in_read = {0, 50000000};
        nanosleep(&wait_in_read, NULL);
        kill(v, SIGTERM);
        (void)!write(go2[1], "x", 1);
        read_anyway += read(back2[0], &r, 1) == 1;
        waitpid(v, &status, 0);
        not_killed += !(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
        close(go2[0]), close(go2[1]), close(back2[0]);
    }
    printf("fatal signal before the message: read it anyway %d, not killed by it %d\n", read_anyway, not_killed);
    if (read_anyway || not_killed)
        wrong['F']++;
    int bad = 0;
    for (int i = 0; i < 256; i++)
        if (i != '.' && wrong[i]) {
            printf("rounds with '%c': %d\n", i, wrong[i]);
            bad++;
        }
    printf("signal_before_message: %d rounds, %s\n", ROUNDS, bad ? "some wrong" : "every signal there first");
    return bad != 0;
}
