/* poll and ppoll on a pipe another thread closes while they wait: when they return (at their
 * timeout), the closed descriptor is POLLNVAL and counts as ready, as Linux's last look at the
 * descriptors finds it. Under hrt the forwarded call kept the host descriptor open and
 * answered 0. */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int p[2], res, use_ppoll;
static short rev;

static void *poller(void *arg) {
    (void)arg;
    struct pollfd f = {p[0], POLLIN, 0};
    struct timespec t = {2, 0}; /* far beyond the 50 ms before the close, even on a busy host */
    res = use_ppoll ? ppoll(&f, 1, &t, NULL) : poll(&f, 1, 2000);
    rev = f.revents;
    return NULL;
}

int main(void) {
    for (use_ppoll = 0; use_ppoll < 2; use_ppoll++) {
        pthread_t t;
        if (pipe(p)) return 1;
        pthread_create(&t, NULL, poller, NULL);
        struct timespec d = {0, 50000000};
        nanosleep(&d, NULL);
        close(p[0]);
        pthread_join(t, NULL);
        close(p[1]);
        printf("%s of a pipe closed meanwhile: %d, revents %#x\n", use_ppoll ? "ppoll" : "poll", res, rev);
    }
    return 0;
}
