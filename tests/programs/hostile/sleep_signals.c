/* Which sleeping threads a signal ends, as on Linux.
 * (1) A signal this thread would only discard (SIGCHLD from an exiting child, SIGURG, SIGWINCH
 *     at their default action) ends no wait, even while another thread blocks it (which keeps
 *     it pending): a 200 ms nanosleep and a 200 ms FUTEX_WAIT run their full time. hrt ended
 *     both with EINTR after ~35 ms.
 * (2) One process-directed signal with a handler, sent while 8 threads sleep and the main
 *     thread blocks it: the handler runs once and exactly one sleep ends with EINTR; the
 *     others run their full time. hrt woke every sleeper, and in some rounds 2-3 ended with
 *     EINTR. Each round sends the signal only once every sleeper is seen asleep (state S in
 *     /proc/self/task/TID/stat) and the sleeps last 2 s, so that a loaded host delaying any
 *     thread by hundreds of ms changes no round. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proc_state.h"

static long long now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static void *blocks_all(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pause();
    return NULL;
}

/* Sends `sig` to this process 30 ms from now (a child process: SIGCHLD is its exit). */
static void signal_soon(int sig) {
    if (fork() == 0) {
        usleep(30000);
        if (sig != SIGCHLD)
            kill(getppid(), sig);
        _exit(0);
    }
}

static void discarded_signals(void) {
    pthread_t t;
    pthread_create(&t, NULL, blocks_all, NULL);
    const int sigs[] = {SIGCHLD, SIGURG, SIGWINCH};
    const char *names[] = {"SIGCHLD", "SIGURG", "SIGWINCH"};
    for (int i = 0; i < 3; i++) {
        for (int futex = 0; futex < 2; futex++) {
            signal_soon(sigs[i]);
            long long t0 = now_ms();
            struct timespec r = {0, 200000000};
            int word = 0;
            long rc = futex ? syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &r, NULL, 0) : nanosleep(&r, NULL);
            int err = errno;
            long long took = now_ms() - t0;
            printf("%s during %s: %s, full time %d\n", names[i], futex ? "FUTEX_WAIT" : "nanosleep",
                   rc == 0 ? "0" : strerror(err), took >= 199);
            while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
        }
    }
}

static atomic_int handled, interrupted, completed, started;
static pid_t sleeper_tid[8];

static void on_usr1(int sig) {
    (void)sig;
    handled++;
}

static void *sleeper(void *arg) {
    struct timespec r = {2, 0};
    sleeper_tid[(long)arg] = gettid();
    started++;
    if (nanosleep(&r, NULL) == 0)
        completed++;
    else if (errno == EINTR)
        interrupted++;
    return NULL;
}

/* Whether thread `tid` of this process sleeps (state S): a sleeper that has started is then in
 * its nanosleep. */
static int asleep(pid_t tid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)tid);
    return sleeps(path);
}

/* A process that sends this one SIGUSR1 for each byte it reads from `go`, made once: a fork
 * per round put the fork's time inside the sleeps, which a loaded host overran. */
static int go[2];
static pid_t sender;

static void start_sender(void) {
    if (pipe(go) != 0)
        exit(1);
    sender = fork();
    if (sender == 0) {
        close(go[1]);
        char c;
        while (read(go[0], &c, 1) == 1)
            kill(getppid(), SIGUSR1);
        _exit(0);
    }
    close(go[0]);
}

static void one_signal_many_sleepers(void) {
    signal(SIGUSR1, on_usr1);
    start_sender();
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    int good = 0, rounds = 10;
    for (int round = 0; round < rounds; round++) {
        handled = interrupted = completed = started = 0;
        pthread_t t[8];
        for (long i = 0; i < 8; i++)
            pthread_create(&t[i], NULL, sleeper, (void *)i);
        /* (Blocked here after the sleepers started: they do not inherit it.) */
        pthread_sigmask(SIG_BLOCK, &usr1, NULL);
        /* The signal goes once every sleeper sleeps (at most ~3 s of looking): on a loaded
         * host a thread could still be starting and take the handler outside its sleep. */
        while (started < 8)
            sched_yield();
        for (int i = 0, tries = 0; i < 8 && tries < 3000; tries++) {
            if (asleep(sleeper_tid[i])) {
                i++;
                continue;
            }
            usleep(1000);
        }
        if (write(go[1], "g", 1) != 1)
            exit(1);
        for (int i = 0; i < 8; i++)
            pthread_join(t[i], NULL);
        /* A signal that came after every sleep ended waits here: take it before judging, so
         * that it is not taken in the next round. */
        pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
        for (int i = 0; i < 5000 && handled < 1; i++)
            usleep(1000);
        int ok = handled == 1 && interrupted == 1 && completed == 7;
        good += ok;
        if (!ok)
            printf("round %d: handler ran %d times, %d EINTR, %d full sleeps\n", round, (int)handled,
                   (int)interrupted, (int)completed);
    }
    close(go[1]);
    waitpid(sender, NULL, 0);
    printf("one SIGUSR1, 8 sleepers: rounds with one handler run, one EINTR, 7 full sleeps: %d of %d\n", good, rounds);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    discarded_signals();
    one_signal_many_sleepers();
    return 0;
}
