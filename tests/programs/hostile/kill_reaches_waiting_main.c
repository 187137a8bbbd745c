/* A thread's kill(getpid()) of its own process interrupts the main thread's blocking call, as
 * Linux gives a process signal to the main thread first when it waits for it: read, poll and
 * nanosleep end with EINTR and the handler runs on the main thread. Under hrt the sending
 * thread took the signal itself on its way back from kill, and the main thread's read went on
 * waiting (the sender writes a byte after 3 s so that nothing hangs). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proc_state.h"

static volatile int where;
static pid_t main_tid;
static int p[2];

static void on_usr1(int sig) {
    (void)sig;
    where = gettid() == main_tid ? 1 : 2;
}

static void *sender(void *arg) {
    (void)arg;
    char stat[64];
    snprintf(stat, sizeof stat, "/proc/self/task/%d/stat", (int)main_tid);
    for (int i = 0; i < 5000 && !sleeps(stat); i++)
        usleep(1000);
    kill(getpid(), SIGUSR1);
    for (int i = 0; i < 3000 && !where; i++)
        usleep(1000);
    if (write(p[1], "x", 1) != 1) /* never hang: the read ends either way */
        return NULL;
    return NULL;
}

static void round_of(const char *what, int kind) {
    where = 0;
    pthread_t t;
    pthread_create(&t, NULL, sender, NULL);
    char b[8];
    struct pollfd pf = {p[0], POLLIN, 0};
    struct timespec long_sleep = {20, 0};
    errno = 0;
    long r = kind == 0 ? read(p[0], b, sizeof b) : kind == 1 ? poll(&pf, 1, 20000) : nanosleep(&long_sleep, NULL);
    int e = errno;
    pthread_join(t, NULL);
    char drain[8];
    struct pollfd q = {p[0], POLLIN, 0};
    if (poll(&q, 1, 0) == 1 && read(p[0], drain, sizeof drain) < 0)
        return;
    printf("%s: %ld (%s), the handler ran on %s\n", what, r, r < 0 ? strerror(e) : "no error",
           where == 1 ? "the main thread" : where == 2 ? "the sending thread" : "no thread");
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1; /* no SA_RESTART: the call ends with EINTR */
    sigaction(SIGUSR1, &sa, NULL);
    main_tid = gettid();
    if (pipe(p))
        return 1;
    round_of("read", 0);
    round_of("poll", 1);
    round_of("nanosleep", 2);
    return 0;
}
