/* A thousand POSIX timers, each armed once (20 ms and i * 20 us from now) to send SIGRTMIN
 * with its number: every one is made and each fires once, as on Linux (under hrt timer_create
 * failed with EAGAIN at the 252nd). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TIMERS 1000

int main(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGRTMIN);
    sigprocmask(SIG_BLOCK, &set, NULL);
    static timer_t t[TIMERS];
    static char seen[TIMERS];
    int made = 0;
    for (int i = 0; i < TIMERS; i++) {
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_SIGNAL;
        ev.sigev_signo = SIGRTMIN;
        ev.sigev_value.sival_int = i;
        if (timer_create(CLOCK_MONOTONIC, &ev, &t[i]) != 0) {
            printf("timer_create %d: %s\n", i, strerror(errno));
            break;
        }
        made++;
    }
    for (int i = 0; i < made; i++) {
        struct itimerspec it = {{0, 0}, {0, 20000000 + i * 20000}};
        if (timer_settime(t[i], 0, &it, NULL) != 0) {
            printf("timer_settime %d: %s\n", i, strerror(errno));
            return 1;
        }
    }
    int fired = 0, twice = 0;
    struct timespec wait = {10, 0};
    siginfo_t si;
    while (fired < made) {
        if (sigtimedwait(&set, &si, &wait) < 0) {
            printf("no signal for 10 s after %d\n", fired);
            break;
        }
        int v = si.si_value.sival_int;
        if (v < 0 || v >= made || seen[v]) {
            twice++;
            continue;
        }
        seen[v] = 1;
        fired++;
    }
    for (int i = 0; i < made; i++)
        timer_delete(t[i]);
    printf("%d timers made, %d fired, %d signals not expected\n", made, fired, twice);
    return 0;
}
