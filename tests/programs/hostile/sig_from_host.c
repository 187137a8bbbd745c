/* Signals sent to the program's process from outside (to `hrt` under hrt run): the test
 * starts it, waits for "ready", sends a signal and compares what follows with Linux.
 *   handler      - SIGINT, SIGTERM and SIGHUP have handlers; the main thread waits in pause()
 *                  and reports which one came, then exits 0.
 *   handler_read - the same, but the main thread is blocked in read() on stdin (a pipe the test
 *                  never writes); a worker thread waits for the handler's flag.
 *   blocked_read - no handler; the main thread blocks in read() on stdin: the default action
 *                  ends the program at once (143 for SIGTERM).
 *   blocked_splice - no handler; the main thread blocks in splice() from an empty datagram
 *                  socket into a pipe, which holds the pipe's lock while it waits (hrt then
 *                  hung in `close` of the pipe at its end, in state D, until SIGKILL).
 *   ignore       - SIGINT ignored: the program carries on and exits 5 after 300 ms.
 *   stop_self    - raise(SIGSTOP) after "ready": the process stops until the test continues it;
 *                  a SIGCONT handler then reports, and it exits 0.
 *   usr1         - a SIGUSR1 handler reports, then it exits 0.
 *   others       - handlers for SIGURG, SIGPROF, SIGRTMIN+5 and 64 (SIGRTMAX): the first that
 *                  comes is reported, then it exits 0 (hrt passed only 11 signals on, and 64
 *                  did not fit its word). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static void on_signal(int sig) { got = sig; }

static void handle(int sig) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(sig, &sa, 0);
}

static void install(void) {
    handle(SIGINT);
    handle(SIGTERM);
    handle(SIGHUP);
}

static void *watch(void *arg) {
    (void)arg;
    while (!got) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, 0);
    }
    printf("worker saw signal %d\n", (int)got);
    fflush(stdout);
    _exit(0);
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "handler")) {
        install();
        printf("ready\n");
        fflush(stdout);
        while (!got) pause();
        printf("got signal %d\n", (int)got);
        return 0;
    }
    if (!strcmp(mode, "handler_read")) {
        install();
        pthread_t t;
        pthread_create(&t, 0, watch, 0);
        printf("ready\n");
        fflush(stdout);
        char c;
        for (;;) read(0, &c, 1);
    }
    if (!strcmp(mode, "blocked_read")) {
        printf("ready\n");
        fflush(stdout);
        char c;
        read(0, &c, 1);
        printf("read returned\n");
        return 0;
    }
    if (!strcmp(mode, "blocked_splice")) {
        int sv[2], p[2];
        if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) || pipe(p))
            return 1;
        printf("ready\n");
        fflush(stdout);
        long r = splice(sv[0], 0, p[1], 0, 4096, 0);
        printf("splice returned %ld\n", r);
        return 0;
    }
    if (!strcmp(mode, "stop_self")) {
        handle(SIGCONT);
        printf("ready\n");
        fflush(stdout);
        raise(SIGSTOP);
        while (!got) pause();
        printf("continued, got signal %d\n", (int)got);
        return 0;
    }
    if (!strcmp(mode, "usr1")) {
        handle(SIGUSR1);
        printf("ready\n");
        fflush(stdout);
        while (!got) pause();
        printf("got signal %d\n", (int)got);
        return 0;
    }
    if (!strcmp(mode, "others")) {
        int sigs[] = {SIGURG, SIGPROF, SIGRTMIN + 5, 64};
        for (int i = 0; i < 4; i++)
            handle(sigs[i]);
        printf("ready\n");
        fflush(stdout);
        while (!got) pause();
        printf("got signal %d\n", (int)got);
        return 0;
    }
    if (!strcmp(mode, "ignore")) {
        signal(SIGINT, SIG_IGN);
        printf("ready\n");
        fflush(stdout);
        struct timespec ts = {0, 300000000};
        nanosleep(&ts, 0);
        printf("still here\n");
        return 5;
    }
    return 2;
}
