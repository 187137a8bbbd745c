// Process calls a differential fuzzer found different (stop 100): setuid(-1) and setgid(-1)
// succeeded (Linux: EINVAL, -1 is no id); kill and tgkill checked the signal number before
// looking up the target (Linux: ESRCH for a missing one whatever the number); a thread's id
// was unknown to getpgid, getsid, setpgid and pidfd_open (Linux finds the thread's process:
// its group and session, EINVAL for setpgid, ENOENT for pidfd_open); pidfd_send_signal refused
// the PIDFD_SIGNAL_* flags (Linux 6.9) and pidfd_getfd was ENOSYS; clone with CLONE_PIDFD
// and CLONE_DETACHED was ENOSYS (Linux: EINVAL); times() counted from the VM's start (0 at
// first; Linux counts from boot).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile pid_t thread_id;
static volatile int stop;

static void *thread_main(void *arg) {
    (void)arg;
    thread_id = syscall(SYS_gettid);
    while (!stop)
        usleep(1000);
    return NULL;
}

static void said(const char *what, long r) {
    printf("%-40s %ld %s\n", what, r < 0 ? -errno : r, r < 0 ? strerror(errno) : "");
}

static volatile int got;
static void on_usr1(int sig) {
    got = sig;
}

int main(void) {
    said("setuid(-1)", syscall(SYS_setuid, -1));
    said("setgid(-1)", syscall(SYS_setgid, -1));
    said("kill(999999, 65)", kill(999999, 65));
    said("kill(999999, -1)", kill(999999, -1));
    said("kill(self, 65)", kill(getpid(), 65));
    said("tgkill(self, 999999, 65)", syscall(SYS_tgkill, getpid(), 999999, 65));
    said("tgkill(self, self, 65)", syscall(SYS_tgkill, getpid(), getpid(), 65));

    int pidfd = -1;
    said("clone(CLONE_PIDFD | CLONE_DETACHED)", syscall(SYS_clone, 0x1000 | 0x400000 | SIGCHLD, 0, &pidfd, 0, 0));

    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    while (!thread_id)
        usleep(1000);
    long g = getpgid(thread_id);
    printf("getpgid(thread) is the group: %d\n", g == getpgrp());
    long s = getsid(thread_id);
    printf("getsid(thread) is the session: %d\n", s == getsid(0));
    said("setpgid(thread, group)", setpgid(thread_id, getpgrp()));
    said("pidfd_open(thread, 0)", syscall(SYS_pidfd_open, thread_id, 0));
    stop = 1;
    pthread_join(t, NULL);

    signal(SIGUSR1, on_usr1);
    int self = syscall(SYS_pidfd_open, getpid(), 0);
    said("pidfd_send_signal(self, flags 3)", syscall(SYS_pidfd_send_signal, self, SIGUSR1, NULL, 3));
    said("pidfd_send_signal(self, THREAD)", syscall(SYS_pidfd_send_signal, self, SIGUSR1, NULL, 1));
    printf("got %d\n", got);
    got = 0;
    said("pidfd_send_signal(self, THREAD_GROUP)", syscall(SYS_pidfd_send_signal, self, SIGUSR1, NULL, 2));
    printf("got %d\n", got);
    int p[2];
    if (pipe(p))
        return 1;
    long copy = syscall(SYS_pidfd_getfd, self, p[1], 0);
    printf("pidfd_getfd(self, pipe) is a new fd: %d\n", copy > p[1]);
    printf("  close-on-exec: %d\n", copy >= 0 && (fcntl(copy, F_GETFD) & FD_CLOEXEC) != 0);
    int wrote = copy >= 0 && write(copy, "x", 1) == 1;
    printf("  writes reach the pipe: %d\n", wrote);
    char c = '-';
    if (wrote && read(p[0], &c, 1) != 1)
        c = '?';
    printf("  read back: %c\n", c);
    said("pidfd_getfd(self, 999)", syscall(SYS_pidfd_getfd, self, 999, 0));
    said("pidfd_getfd(self, pipe, flags 1)", syscall(SYS_pidfd_getfd, self, p[1], 1));
    struct tms usage;
    printf("times() is positive: %d\n", times(&usage) > 0);
    printf("process id checks: done\n");
    return 0;
}
