/* The signal of a CPU-time timer (ITIMER_PROF, ITIMER_VIRTUAL, a POSIX timer on the process CPU
 * clock) goes to a thread that runs, whose time made it expire, as Linux sends it: a thread
 * spins while the main thread sleeps in short nanosleeps, and the main thread's sleeps are
 * (nearly) never interrupted. Under hrt at 2 vCPUs the signal woke the sleeping main thread, whose
 * nanosleep ended with EINTR (a profiler's SIGPROF broke an idle thread's sleeps). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static volatile int stop, to_main, to_spinner;
static pid_t main_tid;

static void on_signal(int sig) {
    (void)sig;
    if (syscall(SYS_gettid) == main_tid)
        to_main++;
    else
        to_spinner++;
}

static void *spin(void *arg) {
    (void)arg;
    while (!stop)
        ;
    return NULL;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* Arms the timer (`start`), sleeps in 20 ms steps until the spinner took 20 signals (30 s at
 * most), disarms it (`stop_timer`), and says where the signals went. */
static void round_of(const char *what, int sig, void (*start)(void), void (*stop_timer)(void)) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(sig, &sa, NULL);
    to_main = to_spinner = stop = 0;
    pthread_t t;
    pthread_create(&t, NULL, spin, NULL);
    start();
    int interrupted = 0;
    double end = now() + 30;
    while (to_spinner < 20 && now() < end) {
        struct timespec nap = {0, 20000000};
        if (nanosleep(&nap, NULL) != 0)
            interrupted++;
    }
    stop_timer();
    stop = 1;
    pthread_join(t, NULL);
    /* Linux's tick can find the expiry while the main thread runs between two sleeps, rarely:
     * a few are allowed. */
    printf("%s: the spinner took at least 20: %s; the sleeping main thread took fewer than 5: %s, "
           "its sleeps interrupted fewer than 5 times: %s\n",
           what, to_spinner >= 20 ? "yes" : "no", to_main < 5 ? "yes" : "no", interrupted < 5 ? "yes" : "no");
}

static void itimer(int which, long us) {
    struct itimerval it = {{0, us}, {0, us}};
    setitimer(which, &it, NULL);
}
static void prof_on(void) { itimer(ITIMER_PROF, 5000); }
static void prof_off(void) { itimer(ITIMER_PROF, 0); }
static void virt_on(void) { itimer(ITIMER_VIRTUAL, 5000); }
static void virt_off(void) { itimer(ITIMER_VIRTUAL, 0); }

static timer_t posix_timer;
static void posix_on(void) {
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_SIGNAL;
    ev.sigev_signo = SIGUSR1;
    timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &posix_timer);
    struct itimerspec its = {{0, 5000000}, {0, 5000000}};
    timer_settime(posix_timer, 0, &its, NULL);
}
static void posix_off(void) { timer_delete(posix_timer); }

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    main_tid = syscall(SYS_gettid);
    round_of("ITIMER_PROF", SIGPROF, prof_on, prof_off);
    round_of("ITIMER_VIRTUAL", SIGVTALRM, virt_on, virt_off);
    round_of("timer on the process CPU clock", SIGUSR1, posix_on, posix_off);
    return 0;
}
