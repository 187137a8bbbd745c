/* Resource limits as Linux applies them, where hrt did not: RLIMIT_RTTIME survives a forked
 * child's exec (a host program: it came back unlimited); RLIMIT_MSGQUEUE limits mq_open
 * (EMFILE; hrt never refused); F_DUPFD at or above a soft RLIMIT_NOFILE of 0-2 is EINVAL (hrt:
 * EMFILE, its table kept three numbers); a CPU limit whose soft and hard values are equal ends
 * the program with SIGKILL, never SIGXCPU (hrt's two timers fired in either order); the SigQ
 * line of /proc/self/status shows a lowered RLIMIT_SIGPENDING (hrt showed the host's). */
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static void in_child(void (*f)(void)) {
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        f();
        fflush(stdout);
        _exit(0);
    }
    waitpid(c, NULL, 0);
}

static const char *self;

static void rttime(void) {
    struct rlimit r = {1000, 2000};
    setrlimit(RLIMIT_RTTIME, &r);
    fflush(stdout);
    execl(self, self, "rttime", (char *)0);
}

static void msgqueue(void) {
    struct rlimit r = {1000, 1000};
    setrlimit(RLIMIT_MSGQUEUE, &r);
    /* (Only a queue past the limit by itself: the limit counts every queue of the user, and
     * other programs of root's may hold some.) */
    struct mq_attr big = {0, 1, 1000, 0};
    char name[64];
    snprintf(name, sizeof name, "/hrt-rlimit-edges-%d", (int)getpid());
    mq_unlink(name);
    errno = 0;
    mqd_t q = mq_open(name, O_CREAT | O_EXCL | O_RDWR, 0600, &big);
    printf("RLIMIT_MSGQUEUE 1000, a queue of 1 x 1000 bytes: %s\n", q == (mqd_t)-1 ? strerror(errno) : "made");
    mq_unlink(name);
}

static void sigpending_limit(void) {
    struct rlimit r = {1234, 1234};
    setrlimit(RLIMIT_SIGPENDING, &r);
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "SigQ:", 5))
            printf("RLIMIT_SIGPENDING 1234: /proc/self/status's SigQ limit %s", strchr(line, '/') + 1);
    if (f)
        fclose(f);
}

static void dupfd(void) {
    for (int lim = 3; lim >= 0; lim--) {
        struct rlimit r = {lim, 64};
        setrlimit(RLIMIT_NOFILE, &r);
        errno = 0;
        int fd = fcntl(0, F_DUPFD, lim);
        printf("RLIMIT_NOFILE %d: F_DUPFD from %d %s\n", lim, lim, fd < 0 ? strerror(errno) : "made one");
    }
}

static void cpu(void) {
    pid_t c = fork();
    if (c == 0) {
        struct rlimit r = {1, 1};
        setrlimit(RLIMIT_CPU, &r);
        for (volatile long i = 0;; i++)
            ;
    }
    int st;
    waitpid(c, &st, 0);
    printf("RLIMIT_CPU 1/1: the busy child ended by signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
}

int main(int argc, char **argv) {
    if (argc > 1) {
        struct rlimit r;
        getrlimit(RLIMIT_RTTIME, &r);
        printf("RLIMIT_RTTIME after a forked child's exec: %ld/%ld\n", (long)r.rlim_cur, (long)r.rlim_max);
        return 0;
    }
    self = argv[0];
    in_child(rttime);
    in_child(msgqueue);
    in_child(dupfd);
    in_child(sigpending_limit);
    cpu();
    return 0;
}
