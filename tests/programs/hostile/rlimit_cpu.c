/* RLIMIT_CPU as on Linux: once the program's CPU time reaches the soft limit it gets SIGXCPU
 * (a handler runs, and the soft limit it reads back has grown by a second, the time to the
 * next one); a forked child counts its own time and dies of SIGXCPU without a handler; with
 * SIGXCPU ignored, the hard limit kills with SIGKILL. About three seconds of CPU time.
 * Usage: rlimit_cpu */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t xcpu;
static void on_xcpu(int sig) { xcpu += sig == SIGXCPU; }

/* Spins (CPU time, no system calls) until `*flag` is set or `max_secs` of CPU time passed. */
static void spin(volatile sig_atomic_t *flag, int max_secs) {
    while (!*flag && clock() < (clock_t)max_secs * CLOCKS_PER_SEC)
        for (volatile int i = 0; i < 1000000; i++)
            ;
}

static void child(int soft, int hard, void (*action)(int)) {
    pid_t c = fork();
    if (c == 0) {
        signal(SIGXCPU, action);
        struct rlimit l = {soft, hard};
        setrlimit(RLIMIT_CPU, &l);
        static volatile sig_atomic_t never;
        spin(&never, 10);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    printf("child, soft %d hard %d, SIGXCPU %s: %s %d\n", soft, hard, action == SIG_IGN ? "ignored" : "default",
           WIFSIGNALED(st) ? "killed by" : "exited", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct rlimit l;
    getrlimit(RLIMIT_CPU, &l);
    printf("CPU limit at start: %s\n", l.rlim_cur == RLIM_INFINITY ? "unlimited" : "limited");
    signal(SIGXCPU, on_xcpu);
    struct rlimit one = {1, 10};
    printf("set soft 1 hard 10: %d\n", setrlimit(RLIMIT_CPU, &one));
    spin(&xcpu, 5);
    getrlimit(RLIMIT_CPU, &l);
    printf("SIGXCPU handled %d time(s); soft limit now %llu, hard %llu\n", xcpu, (unsigned long long)l.rlim_cur,
           (unsigned long long)l.rlim_max);
    struct rlimit ten = {10, 10};
    printf("set soft 10: %d\n", setrlimit(RLIMIT_CPU, &ten));
    child(1, 10, SIG_DFL);
    child(1, 1, SIG_IGN);
    return 0;
}
