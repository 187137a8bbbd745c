// Timers that send signals: alarm with pause, alarm's remaining seconds, an unhandled SIGALRM,
// setitimer(ITIMER_REAL) intervals, timer_create with SIGEV_SIGNAL (si_code, si_value) and
// SIGEV_THREAD_ID to another thread. `sig_timers CASE`; output does not depend on timing.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "handler.h"

static volatile int ticks, code, value, on_tid_ok;
static volatile pid_t target_tid;

static void on_sig(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    (void)sig;
    ticks++;
    code = si->si_code;
    value = si->si_value.sival_int;
    if (target_tid)
        on_tid_ok = gettid() == target_tid;
}

static void install(int sig) { set_info_handler(sig, on_sig, 0); }

static void *waiter(void *arg) {
    (void)arg;
    target_tid = gettid();
    suspend_until(&ticks);
    return NULL;
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "alarm";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(c, "alarm")) {
        install(SIGALRM);
        alarm(1);
        int r = pause();
        printf("pause=%d eintr=%d ticks=%d si_code=%d\n", r, errno == EINTR, ticks, code);
        alarm(100);
        unsigned left = alarm(0); // 100, or less after a long stall on a loaded host
        printf("alarm left>=98: %d\n", left >= 98 && left <= 100);
        printf("alarm left after cancel=%u\n", alarm(0));
    } else if (!strcmp(c, "alarm_spin")) {
        // The alarm must reach a thread that never enters the kernel.
        install(SIGALRM);
        alarm(1);
        while (!ticks)
            ;
        printf("spinning thread got SIGALRM: si_code=%d\n", code);
    } else if (!strcmp(c, "itimer_spin")) {
        install(SIGALRM);
        struct itimerval it = {{0, 20000}, {0, 20000}};
        setitimer(ITIMER_REAL, &it, NULL);
        while (ticks < 3)
            ;
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
        printf("spinning thread got 3 ticks\n");
    } else if (!strcmp(c, "alarm_default")) {
        printf("waiting for SIGALRM\n");
        alarm(1);
        for (;;)
            pause();
    } else if (!strcmp(c, "setitimer")) {
        install(SIGALRM);
        struct itimerval it = {{0, 20000}, {0, 20000}};
        setitimer(ITIMER_REAL, &it, NULL);
        sigset_t none;
        sigemptyset(&none);
        while (ticks < 3)
            sigsuspend(&none);
        struct itimerval off = {{0, 0}, {0, 0}}, old;
        setitimer(ITIMER_REAL, &off, &old);
        printf("ticks>=3: %d interval=%ld us\n", ticks >= 3, (long)old.it_interval.tv_usec);
        getitimer(ITIMER_REAL, &old);
        printf("after disarm: %ld %ld\n", (long)old.it_value.tv_sec, (long)old.it_value.tv_usec);
    } else if (!strcmp(c, "posix")) {
        install(SIGUSR1);
        struct sigevent ev;
        signal_event(&ev, SIGUSR1, 42);
        timer_t t;
        if (timer_create(CLOCK_MONOTONIC, &ev, &t) != 0)
            perror("timer_create");
        struct itimerspec its = {{0, 0}, {0, 30 * 1000 * 1000}};
        timer_settime(t, 0, &its, NULL);
        sigset_t none;
        sigemptyset(&none);
        while (ticks == 0)
            sigsuspend(&none);
        printf("posix timer: ticks=%d si_code=%d value=%d\n", ticks, code, value);
        struct itimerspec now;
        timer_gettime(t, &now);
        printf("disarmed after one shot: %d\n", now.it_value.tv_sec == 0 && now.it_value.tv_nsec == 0);
        printf("delete=%d\n", timer_delete(t));
    } else if (!strcmp(c, "thread_id")) {
        install(SIGUSR2);
        sigset_t block;
        sigemptyset(&block);
        sigaddset(&block, SIGUSR2);
        pthread_sigmask(SIG_BLOCK, &block, NULL); // only the waiter can take it
        pthread_t th;
        pthread_create(&th, NULL, waiter, NULL);
        while (target_tid == 0)
            sched_yield();
        struct sigevent ev;
        memset(&ev, 0, sizeof ev);
        ev.sigev_notify = SIGEV_THREAD_ID;
        ev.sigev_signo = SIGUSR2;
        ev._sigev_un._tid = target_tid;
        timer_t t;
        if (timer_create(CLOCK_REALTIME, &ev, &t) != 0)
            perror("timer_create");
        struct itimerspec its = {{0, 0}, {0, 10 * 1000 * 1000}};
        timer_settime(t, 0, &its, NULL);
        pthread_join(th, NULL);
        printf("thread-directed timer ran on its thread=%d si_code=%d\n", on_tid_ok, code);
    } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    return 0;
}
