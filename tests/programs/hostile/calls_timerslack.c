// The timer slack as on Linux (LTP's prctl08): PR_SET_TIMERSLACK and PR_GET_TIMERSLACK per
// thread, /proc/self/timerslack_ns showing the main thread's, 0 restoring the default, a new
// thread starting with its creator's slack as both current and default, and a forked child
// whose default is the forking thread's current slack. The values printed are relative to
// the slack the program started with (its parent's), which differs between hosts.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHOW_WIDTH 44
#include "show.h"

static unsigned long initial;

static long proc_slack(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long v = -1;
    if (fscanf(f, "%ld", &v) != 1)
        v = -2;
    fclose(f);
    return v;
}

/// The slack relative to the initial one: "initial", or the value itself.
static void show_slack(const char *what, long v) {
    if (v >= 0 && (unsigned long)v == initial)
        printf("%-*s initial\n", SHOW_WIDTH, what);
    else
        show(what, v);
}

static void *thread_main(void *arg) {
    (void)arg;
    show_slack("thread: slack at start", prctl(PR_GET_TIMERSLACK));
    show("thread: set 1234", prctl(PR_SET_TIMERSLACK, 1234));
    show_slack("thread: its slack", prctl(PR_GET_TIMERSLACK));
    show("thread: reset with 0", prctl(PR_SET_TIMERSLACK, 0));
    show_slack("thread: slack after reset (creator's)", prctl(PR_GET_TIMERSLACK));
    return NULL;
}

int main(void) {
    initial = prctl(PR_GET_TIMERSLACK);
    show_slack("/proc/self/timerslack_ns at start", proc_slack("/proc/self/timerslack_ns"));
    unsigned long values[] = {1, 70000, 2147483647UL, 0};
    for (int i = 0; i < 4; i++) {
        char what[64];
        snprintf(what, sizeof what, "set %lu", values[i]);
        show(what, prctl(PR_SET_TIMERSLACK, values[i]));
        show_slack("  get", prctl(PR_GET_TIMERSLACK));
        show_slack("  /proc/self/timerslack_ns", proc_slack("/proc/self/timerslack_ns"));
    }
    show("set 90000", prctl(PR_SET_TIMERSLACK, 90000));
    pthread_t th;
    pthread_create(&th, NULL, thread_main, NULL);
    pthread_join(th, NULL);
    show_slack("main: slack after the thread's changes", prctl(PR_GET_TIMERSLACK));
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        show_slack("child: slack", prctl(PR_GET_TIMERSLACK));
        show_slack("child: /proc/self/timerslack_ns", proc_slack("/proc/self/timerslack_ns"));
        show("child: set 5", prctl(PR_SET_TIMERSLACK, 5));
        show("child: reset with 0", prctl(PR_SET_TIMERSLACK, 0));
        show_slack("child: default (parent's at fork)", prctl(PR_GET_TIMERSLACK));
        show_slack("child: /proc/self/timerslack_ns", proc_slack("/proc/self/timerslack_ns"));
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    show("main: reset with 0", prctl(PR_SET_TIMERSLACK, 0));
    show_slack("main: slack (initial)", prctl(PR_GET_TIMERSLACK));
    show_slack("main: /proc/self/timerslack_ns", proc_slack("/proc/self/timerslack_ns"));
    printf("timerslack: done\n");
    return 0;
}
