// CPU-time timers with intervals far below Linux's tick (stress-ng's itimer stressor sets 1 us):
// Linux looks at them once a tick, so the program still runs and its alarm still ends it; a
// POSIX CPU-clock timer counts the expiries between as overruns. Under hrt such a timer sent a
// signal every 50 us, each taking longer to deliver than that: the loop never ran again and
// the alarm never ended it. Compared with the native run (no counts: they depend on timing).
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t stop, profs, overruns_seen;
static timer_t posix_timer;

static void on_prof(int sig) {
    (void)sig;
    profs++;
}

static void on_alarm(int sig) {
    (void)sig;
    stop = 1;
}

static void on_posix(int sig) {
    (void)sig;
    if (timer_getoverrun(posix_timer) > 0)
        overruns_seen = 1;
}

static void spin_until_stopped(void) {
    struct itimerval g;
    long loops = 0;
    while (!stop) {
        getitimer(ITIMER_PROF, &g);
        loops++;
    }
    printf("  the loop ran on: %s\n", loops > 1000 ? "yes" : "no");
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sigaction(SIGPROF, &sa, NULL);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    sa.sa_handler = on_posix;
    sigaction(SIGRTMIN, &sa, NULL);

    struct itimerval it = {{0, 1}, {0, 1}};
    setitimer(ITIMER_PROF, &it, NULL);
    alarm(1);
    spin_until_stopped();
    memset(&it, 0, sizeof it);
    setitimer(ITIMER_PROF, &it, NULL);
    printf("ITIMER_PROF every 1 us: alarm ended the loop, SIGPROF came: %s\n", profs > 0 ? "yes" : "no");

    stop = 0;
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGRTMIN;
    if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &posix_timer) != 0)
        return 1;
    struct itimerspec ts = {{0, 1000}, {0, 1000}};
    timer_settime(posix_timer, 0, &ts, NULL);
    alarm(1);
    spin_until_stopped();
    timer_delete(posix_timer);
    printf("CPU-clock POSIX timer every 1 us: alarm ended the loop, overruns counted: %s\n",
           overruns_seen ? "yes" : "no");
    printf("cpu timers: done\n");
    return 0;
}
