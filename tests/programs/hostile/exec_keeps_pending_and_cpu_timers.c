/* An exec keeps the signals pending that the mask blocks (an ignored one too) and the
 * CPU-time interval timers (ITIMER_VIRTUAL, ITIMER_PROF), as it keeps the alarm. A forked
 * child's exec runs a host program (`--children host`), which lost both (pending 0, timers
 * disarmed). Checked from a forked child and from the program's own exec. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *how) {
    sigset_t p;
    sigpending(&p);
    struct itimerval v, pr;
    getitimer(ITIMER_VIRTUAL, &v);
    getitimer(ITIMER_PROF, &pr);
    printf("%s: pending SIGTERM %d, SIGUSR1 %d, SIGUSR2 (ignored) %d, SIGHUP (not raised) %d\n", how,
           sigismember(&p, SIGTERM), sigismember(&p, SIGUSR1), sigismember(&p, SIGUSR2), sigismember(&p, SIGHUP));
    printf("%s: ITIMER_VIRTUAL armed %d (interval %ld s), ITIMER_PROF armed %d (interval %ld s)\n", how,
           v.it_value.tv_sec > 40 && v.it_value.tv_sec <= 60, (long)v.it_interval.tv_sec,
           pr.it_value.tv_sec > 30 && pr.it_value.tv_sec <= 50, (long)pr.it_interval.tv_sec);
}

static void prepare_and_exec(const char *self, const char *how) {
    sigset_t m;
    sigemptyset(&m);
    sigaddset(&m, SIGTERM);
    sigaddset(&m, SIGUSR1);
    sigaddset(&m, SIGUSR2);
    sigaddset(&m, SIGHUP);
    sigprocmask(SIG_BLOCK, &m, NULL);
    signal(SIGUSR2, SIG_IGN);
    raise(SIGTERM);
    kill(getpid(), SIGUSR1);
    raise(SIGUSR2);
    struct itimerval v = {{7, 0}, {60, 0}}, p = {{3, 0}, {50, 0}};
    setitimer(ITIMER_VIRTUAL, &v, NULL);
    setitimer(ITIMER_PROF, &p, NULL);
    fflush(stdout);
    execl(self, self, how, (char *)0);
    printf("%s: exec failed\n", how);
}

int main(int argc, char **argv) {
    if (argc > 1) {
        show(argv[1]);
        return 0;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0)
        return 1;
    self[n] = 0;
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        prepare_and_exec(self, "forked child's exec");
        _exit(1);
    }
    int st;
    waitpid(c, &st, 0);
    prepare_and_exec(self, "own exec");
    return 1;
}
