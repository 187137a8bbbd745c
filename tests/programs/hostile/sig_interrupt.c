// Signals that interrupt blocked threads: a futex wait ends with EINTR when a handler runs
// (and is restarted with SA_RESTART), nanosleep ends with EINTR and the time left, and a
// process-directed kill runs on the thread that does not block the signal. `sig_interrupt
// CASE`. The sender waits until /proc shows the target asleep (at most 10 s) after it says it
// is about to block, so that the signal finds it blocked (as it would on Linux) however late a
// loaded host runs it.
#define _GNU_SOURCE
#include "handler.h"
#include "proc_state.h"
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile int ready, handled, word, done;
static volatile pid_t worker_tid, handler_tid;
static volatile long result, err, left_s;

static void on_usr1(int sig) {
    (void)sig;
    handled++;
    handler_tid = gettid();
}

static void install(int flags) {
    set_handler(SIGUSR1, on_usr1, flags);
}

static void *futex_waiter(void *arg) {
    (void)arg;
    worker_tid = gettid();
    ready = 1;
    result = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    err = errno;
    done = 1;
    return NULL;
}

static void *sleeper(void *arg) {
    (void)arg;
    worker_tid = gettid();
    ready = 1;
    struct timespec t = {30, 0}, left = {0, 0};
    // (a signal right after the sleep starts may leave 30 s and the timer slack)
    result = nanosleep(&t, &left);
    err = errno;
    left_s = left.tv_sec;
    return NULL;
}

static void *unblocked_waiter(void *arg) {
    (void)arg;
    sigset_t none;
    sigemptyset(&none);
    pthread_sigmask(SIG_SETMASK, &none, NULL);
    worker_tid = gettid();
    ready = 1;
    while (!handled)
        pause();
    return NULL;
}

// Waits until the worker has said it is about to block, then until it sleeps (or has ended).
static void settle(void) {
    while (!ready)
        sched_yield();
    char stat[64];
    snprintf(stat, sizeof stat, "/proc/self/task/%d/stat", (int)worker_tid);
    for (int i = 0; i < 10000 && !done && !sleeps(stat); i++)
        usleep(1000);
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "futex";
    setvbuf(stdout, NULL, _IONBF, 0);
    pthread_t th;
    if (!strcmp(c, "futex") || !strcmp(c, "futex_restart")) {
        int restart = !strcmp(c, "futex_restart");
        install(restart ? SA_RESTART : 0);
        pthread_create(&th, NULL, futex_waiter, NULL);
        settle();
        syscall(SYS_tgkill, getpid(), worker_tid, SIGUSR1);
        if (restart) {
            while (!handled)
                sched_yield();
            settle(); // the wait has started again (the handler ran, so the worker ran since)
            word = 1;
            while (!done && syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) == 0)
                sched_yield();
        }
        pthread_join(th, NULL);
        printf("futex wait=%ld eintr=%d handled=%d on_worker=%d\n", result, err == EINTR, handled,
               handler_tid == worker_tid);
    } else if (!strcmp(c, "nanosleep")) {
        install(SA_RESTART); // nanosleep is never restarted after a handler
        pthread_create(&th, NULL, sleeper, NULL);
        settle();
        syscall(SYS_tgkill, getpid(), worker_tid, SIGUSR1);
        pthread_join(th, NULL);
        printf("nanosleep=%ld eintr=%d left_plenty=%d handled=%d\n", result, err == EINTR, left_s >= 20 && left_s <= 30,
               handled);
    } else if (!strcmp(c, "process")) {
        install(0);
        sigset_t block;
        sigemptyset(&block);
        sigaddset(&block, SIGUSR1);
        pthread_sigmask(SIG_BLOCK, &block, NULL);
        pthread_create(&th, NULL, unblocked_waiter, NULL);
        settle();
        kill(getpid(), SIGUSR1);
        pthread_join(th, NULL);
        printf("kill ran on the thread that does not block it=%d\n", handler_tid == worker_tid);
    } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    return 0;
}
