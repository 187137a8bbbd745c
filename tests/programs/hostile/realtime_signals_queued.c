/* Real-time signals another process sends arrive once each and in the order sent, as Linux
 * queues them. Under hrt they pass through the host: `hrt` received every instance, but the
 * channel kept one bit per signal, so a burst of sigqueues from a child mostly merged (2-8 of
 * 50-300 arrived), and two host threads could pass two instances on in swapped order.
 *
 * 1. A forked child sigqueues 2,000 instances back to back to its parent, whose handler
 *    records their values; then 500 to a parent that blocks the signal and takes them with
 *    sigwaitinfo.
 * 2. Two signals interleaved while blocked: each signal's instances in order.
 * 3. The parent sigqueues 1,000 to its forked child (a forked program's own `hrt`).
 * 4. rt_tgsigqueueinfo to the parent's main thread in particular (its pid as the tid).
 * Every wait is for a count, never for a time. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define HANDLED 2000
static volatile int got;
static int values[HANDLED];

static void on_signal(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)ctx;
    if (got < HANDLED)
        values[got] = si->si_value.sival_int;
    got++;
}

/* How many of values[0..n) break the order 0, 1, 2, ... */
static int out_of_order(const int *v, int n) {
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += v[i] != i;
    return bad;
}

static void send_n(pid_t to, int sig, int n, int tg) {
    for (int i = 0; i < n; i++) {
        union sigval v = {.sival_int = i};
        if (tg) {
            siginfo_t si;
            memset(&si, 0, sizeof si);
            si.si_signo = sig;
            si.si_code = SI_QUEUE;
            si.si_pid = getpid();
            si.si_uid = getuid();
            si.si_value = v;
            if (syscall(SYS_rt_tgsigqueueinfo, to, to, sig, &si) != 0)
                perror("rt_tgsigqueueinfo");
        } else if (sigqueue(to, sig, v) != 0) {
            perror("sigqueue");
        }
    }
}

/* Takes n instances of the blocked signals in `set` with sigwaitinfo; counts per signal
 * those out of order. */
static void take_n(const sigset_t *set, int n, int sig_a, int sig_b, const char *what) {
    int next_a = 0, next_b = 0, bad = 0;
    for (int i = 0; i < n; i++) {
        siginfo_t si;
        int s = sigwaitinfo(set, &si);
        if (s == sig_a)
            bad += si.si_value.sival_int != next_a++;
        else if (s == sig_b)
            bad += si.si_value.sival_int != next_b++;
        else
            bad++;
    }
    printf("%s: %d of %d taken, %d out of order\n", what, next_a + next_b, n, bad);
}

static void wait_child(pid_t c) {
    int st;
    waitpid(c, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        printf("child status %#x\n", st);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int a = SIGRTMIN + 3, b = SIGRTMIN + 5;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(a, &sa, NULL);
    pid_t parent = getpid();

    /* 1. Handled as they come. */
    pid_t c = fork();
    if (c == 0) {
        send_n(parent, a, HANDLED, 0);
        _exit(0);
    }
    wait_child(c);
    while (got < HANDLED)
        pause();
    printf("handler: %d of %d arrived, %d out of order\n", got, HANDLED, out_of_order(values, HANDLED));

    /* 1b and 2. Blocked, then taken. */
    sigset_t both;
    sigemptyset(&both);
    sigaddset(&both, a);
    sigaddset(&both, b);
    sigprocmask(SIG_BLOCK, &both, NULL);
    c = fork();
    if (c == 0) {
        send_n(parent, a, 500, 0);
        for (int i = 0; i < 300; i++) {
            union sigval v = {.sival_int = i};
            sigqueue(parent, a, (union sigval){.sival_int = 500 + i});
            sigqueue(parent, b, v);
        }
        _exit(0);
    }
    wait_child(c);
    take_n(&both, 1100, a, b, "blocked, two signals interleaved");

    /* 3. To a forked child. */
    int ready[2];
    if (pipe(ready) != 0)
        return 1;
    c = fork();
    if (c == 0) {
        close(ready[0]);
        if (write(ready[1], "r", 1) != 1)
            _exit(2);
        take_n(&both, 1000, a, b, "in a forked child");
        _exit(0);
    }
    close(ready[1]);
    char r;
    if (read(ready[0], &r, 1) != 1)
        return 1;
    send_n(c, a, 1000, 0);
    wait_child(c);

    /* 4. To the main thread in particular. */
    c = fork();
    if (c == 0) {
        send_n(parent, b, 20, 1);
        _exit(0);
    }
    wait_child(c);
    take_n(&both, 20, a, b, "to the main thread");
    return 0;
}
