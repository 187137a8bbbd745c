// CPU-time clocks and timers: clock_gettime on CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID
// and the ids of clock_getcpuclockid/pthread_getcpuclockid; setitimer(ITIMER_VIRTUAL and
// ITIMER_PROF) delivering SIGVTALRM and SIGPROF once that much CPU time is used; getitimer;
// timer_create on the CPU clocks. `sig_cputimers CASE`. Nothing printed on stdout depends on
// timing: a timer must fire, and the CPU time used when it fires must be at least its value
// (less 10 ms). For setitimer's timers that last check goes to stderr as "cpu-check: ...": Linux
// runs them on user and system times sampled at its ticks (a whole tick for the thread the tick
// finds running), which on a loaded machine can run well ahead of CLOCK_PROCESS_CPUTIME_ID, so
// only hrt's answer is checked (monitor/tests/signals.rs).
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "handler.h"

#define MS 1000000LL
#define SLACK (10 * MS)

static volatile int fired, code, value;
static volatile long long cpu_at_signal;
static clockid_t measured = CLOCK_PROCESS_CPUTIME_ID;

static long long ns(clockid_t c) {
    struct timespec ts;
    if (clock_gettime(c, &ts) != 0)
        return -1;
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_sig(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    (void)sig;
    if (fired == 0)
        cpu_at_signal = ns(measured);
    fired++;
    code = si->si_code;
    value = si->si_value.sival_int;
}

static void install(int sig) { set_info_handler(sig, on_sig, SA_RESTART); }

// Spins (using CPU) until `*flag` reaches `n`.
static void spin_until(volatile int *flag, int n) {
    while (*flag < n)
        ;
}

static volatile int stop;
static volatile long long worker_spun;

static void *spinner(void *arg) {
    (void)arg;
    while (!stop)
        ;
    return NULL;
}

// Spins `want` ns of its own CPU time, then waits (without using CPU) for `stop`.
static void *spin_then_sleep(void *arg) {
    long long want = *(long long *)arg;
    long long start = ns(CLOCK_THREAD_CPUTIME_ID);
    while (ns(CLOCK_THREAD_CPUTIME_ID) - start < want)
        ;
    worker_spun = 1;
    while (!stop)
        usleep(1000);
    return NULL;
}

static void itimer(int which, int sig, const char *name, int threads) {
    install(sig);
    pthread_t th[4];
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, spinner, NULL);
    long long before = ns(CLOCK_PROCESS_CPUTIME_ID);
    struct itimerval it = {{0, 0}, {0, 100 * 1000}};
    int set = setitimer(which, &it, NULL);
    struct itimerval now;
    getitimer(which, &now); // at once, printed afterwards
    // Linux adds a tick to the CPU-time itimers' value (set_cpu_itimer): up to 10 ms more. The
    // spinners (or, under hrt, a stall of the vCPU, which counts as running) may have used the
    // 100 ms already: then the timer may have fired (its handler perhaps still to run on a
    // spinner), and the program has used at least half of it.
    int armed = (now.it_value.tv_sec || now.it_value.tv_usec) && now.it_value.tv_sec == 0 &&
                now.it_value.tv_usec <= 110 * 1000;
    int used_up = fired || ns(CLOCK_PROCESS_CPUTIME_ID) - before >= 50 * MS;
    printf("setitimer=%d\n", set);
    printf("getitimer: armed with at most 110 ms left, unless used up: %d\n", armed || used_up);
    spin_until(&fired, 1);
    stop = 1;
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    printf("%s arrived=%d si_code=%d\n", name, fired, code);
    fprintf(stderr, "cpu-check: cpu used >= 100 ms: %d\n", cpu_at_signal - before >= 100 * MS - SLACK);
    getitimer(which, &now);
    printf("one-shot disarmed: %d\n", now.it_value.tv_sec == 0 && now.it_value.tv_usec == 0);
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "clocks";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(c, "clocks")) {
        long long p0 = ns(CLOCK_PROCESS_CPUTIME_ID), t0 = ns(CLOCK_THREAD_CPUTIME_ID);
        printf("readable: %d %d\n", p0 >= 0, t0 >= 0);
        while (ns(CLOCK_THREAD_CPUTIME_ID) - t0 < 50 * MS)
            ;
        long long p1 = ns(CLOCK_PROCESS_CPUTIME_ID), t1 = ns(CLOCK_THREAD_CPUTIME_ID);
        printf("after spinning 50 ms: thread advanced >= 50 ms: %d, process >= thread: %d\n", t1 - t0 >= 50 * MS,
               p1 - p0 >= t1 - t0 - SLACK);
        struct timespec sl = {0, 200 * MS};
        nanosleep(&sl, NULL);
        long long t2 = ns(CLOCK_THREAD_CPUTIME_ID);
        printf("sleeping 200 ms used under 100 ms of CPU: %d\n", t2 - t1 < 100 * MS);
        clockid_t pc, tc;
        printf("clock_getcpuclockid=%d pthread_getcpuclockid=%d\n", clock_getcpuclockid(0, &pc),
               pthread_getcpuclockid(pthread_self(), &tc));
        long long pp = ns(pc), tt = ns(tc), t3 = ns(CLOCK_THREAD_CPUTIME_ID);
        printf("process clock id reads the process's time: %d\n", pp >= p1);
        printf("thread clock id reads the thread's time: %d\n", tt >= t2 && tt <= t3);
        struct timespec res;
        printf("clock_getres: %d %d %d\n", clock_getres(CLOCK_PROCESS_CPUTIME_ID, &res),
               clock_getres(CLOCK_THREAD_CPUTIME_ID, &res), clock_getres(pc, &res));
        // Another thread's clock: it spins 30 ms of its own time, then sleeps.
        long long want = 30 * MS;
        pthread_t th;
        pthread_create(&th, NULL, spin_then_sleep, &want);
        pthread_getcpuclockid(th, &tc);
        while (!worker_spun)
            usleep(1000);
        printf("another thread's clock >= 30 ms: %d\n", ns(tc) >= 30 * MS);
        stop = 1;
        pthread_join(th, NULL);
        // Kind 3 does not exist: EINVAL.
        clockid_t bad = (clockid_t)((~0U << 3) | 3);
        struct timespec ts;
        int r = clock_gettime(bad, &ts);
        printf("unknown CPU clock kind: %s\n", r < 0 && errno == EINVAL ? "EINVAL" : "other");
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("getrusage user+system time >= 50 ms: %d\n",
               (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec >=
                   50000 - SLACK / 1000);
    } else if (!strcmp(c, "virtual")) {
        itimer(ITIMER_VIRTUAL, SIGVTALRM, "SIGVTALRM", 0);
    } else if (!strcmp(c, "prof")) {
        itimer(ITIMER_PROF, SIGPROF, "SIGPROF", 0);
    } else if (!strcmp(c, "prof_threads")) {
        // Two more threads spin: the program's CPU time counts all three.
        itimer(ITIMER_PROF, SIGPROF, "SIGPROF", 2);
    } else if (!strcmp(c, "interval")) {
        // ITIMER_VIRTUAL every 20 ms of CPU: three signals use at least 60 ms.
        install(SIGVTALRM);
        long long before = ns(CLOCK_PROCESS_CPUTIME_ID);
        struct itimerval it = {{0, 20 * 1000}, {0, 20 * 1000}};
        setitimer(ITIMER_VIRTUAL, &it, NULL);
        spin_until(&fired, 3);
        long long used = ns(CLOCK_PROCESS_CPUTIME_ID) - before;
        struct itimerval off = {{0, 0}, {0, 0}}, old;
        setitimer(ITIMER_VIRTUAL, &off, &old);
        printf("three SIGVTALRM, old interval=%ld us\n", (long)old.it_interval.tv_usec);
        fprintf(stderr, "cpu-check: cpu used >= 60 ms: %d\n", used >= 60 * MS - SLACK);
    } else if (!strcmp(c, "getitimer")) {
        struct itimerval it = {{3, 0}, {10, 0}}, now, old, readback[2]; // interval 3 s, value 10 s
        // Set and read at once, printed afterwards. A stall can take some of the value (under
        // hrt a vCPU the host takes away counts as running): 8 s or more are left.
        int v = setitimer(ITIMER_VIRTUAL, &it, NULL), p = setitimer(ITIMER_PROF, &it, NULL);
        for (int w = ITIMER_VIRTUAL; w <= ITIMER_PROF; w++)
            getitimer(w, &readback[w - ITIMER_VIRTUAL]);
        printf("setitimer VIRTUAL=%d PROF=%d\n", v, p);
        for (int w = ITIMER_VIRTUAL; w <= ITIMER_PROF; w++) {
            now = readback[w - ITIMER_VIRTUAL];
            // Linux adds a tick (up to 10 ms) to the value.
            printf("which %d: value in [8, 10.01] s: %d interval=%ld s\n", w,
                   (now.it_value.tv_sec >= 8 && now.it_value.tv_sec <= 9) ||
                       (now.it_value.tv_sec == 10 && now.it_value.tv_usec <= 10000),
                   (long)now.it_interval.tv_sec);
        }
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_VIRTUAL, &off, &old);
        printf("disarm: old value set=%d\n", old.it_value.tv_sec >= 5);
        getitimer(ITIMER_VIRTUAL, &now);
        printf("disarmed=%d\n", now.it_value.tv_sec == 0 && now.it_value.tv_usec == 0);
        errno = 0;
        printf("setitimer(3): %s\n", setitimer(3, &it, NULL) < 0 && errno == EINVAL ? "EINVAL" : "other");
        errno = 0;
        printf("getitimer(3): %s\n", getitimer(3, &now) < 0 && errno == EINVAL ? "EINVAL" : "other");
    } else if (!strcmp(c, "posix_thread")) {
        // A timer on the calling thread's CPU clock: SI_TIMER with its value, after 50 ms of it.
        install(SIGUSR1);
        measured = CLOCK_THREAD_CPUTIME_ID;
        struct sigevent ev;
        signal_event(&ev, SIGUSR1, 42);
        timer_t t;
        printf("timer_create=%d\n", timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t));
        long long before = ns(CLOCK_THREAD_CPUTIME_ID);
        struct itimerspec its = {{0, 0}, {0, 50 * MS}}, cur;
        timer_settime(t, 0, &its, NULL);
        timer_gettime(t, &cur);
        // Unless a stall (which under hrt counts as the thread's CPU time) let it fire already.
        printf("timer_gettime: armed with at most 50 ms left, unless fired: %d\n",
               (cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec > 0 && cur.it_value.tv_nsec <= 50 * MS) || fired);
        spin_until(&fired, 1);
        printf("fired=%d SI_TIMER=%d value=%d thread cpu used >= 50 ms: %d\n", fired, code == SI_TIMER, value,
               cpu_at_signal - before >= 50 * MS - SLACK);
        printf("delete=%d\n", timer_delete(t));
    } else if (!strcmp(c, "posix_other")) {
        // A timer on another thread's clock (pthread_getcpuclockid) and one on the program's
        // (clock_getcpuclockid): the main thread waits in sigwaitinfo, using no CPU, while the
        // worker spins.
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        sigaddset(&set, SIGUSR2);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
        pthread_t th;
        pthread_create(&th, NULL, spinner, NULL);
        clockid_t tc, pc;
        pthread_getcpuclockid(th, &tc);
        clock_getcpuclockid(0, &pc);
        struct sigevent ev;
        signal_event(&ev, SIGUSR1, 1);
        timer_t t1, t2;
        printf("timer_create thread clock=%d\n", timer_create(tc, &ev, &t1));
        signal_event(&ev, SIGUSR2, 2);
        printf("timer_create process clock=%d\n", timer_create(pc, &ev, &t2));
        long long tb = ns(tc), pb = ns(pc);
        struct itimerspec a = {{0, 0}, {0, 40 * MS}}, b = {{0, 0}, {0, 80 * MS}};
        timer_settime(t1, 0, &a, NULL);
        timer_settime(t2, 0, &b, NULL);
        // Printed in signal order, not arrival order: the two expiries are 40 ms of CPU time
        // apart, but under HRT a vCPU the host takes away still counts as running (see
        // linux/cputime.rs), so on a loaded host the program's clock can pass 80 ms first.
        char line[2][128] = {"SIGUSR1 never came\n", "SIGUSR2 never came\n"};
        for (int i = 0; i < 2; i++) {
            siginfo_t si;
            int s = sigwaitinfo(&set, &si);
            int k = s == SIGUSR1 ? 0 : 1;
            long long used = k == 0 ? ns(tc) - tb : ns(pc) - pb;
            snprintf(line[k], sizeof line[k], "got %s value=%d SI_TIMER=%d cpu used >= %d ms: %d\n",
                     k == 0 ? "SIGUSR1" : "SIGUSR2", si.si_value.sival_int, si.si_code == SI_TIMER,
                     k == 0 ? 40 : 80, used >= (k == 0 ? 40 : 80) * MS - SLACK);
        }
        fputs(line[0], stdout);
        fputs(line[1], stdout);
        stop = 1;
        pthread_join(th, NULL);
    } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    return 0;
}
