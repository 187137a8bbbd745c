// clone with CLONE_PIDFD: the parent gets a pidfd (close-on-exec) of its child, fork-style
// and vfork-style (CLONE_VM | CLONE_VFORK, as Go's os/exec starts processes): it polls
// readable once the child has ended, waitid(P_PIDFD) reaps it with its status, and
// pidfd_send_signal reaches it. CLONE_PIDFD with CLONE_PARENT_SETTID is EINVAL.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

// How child `pidfd` ended, through the pidfd alone.
static void report(const char *what, int pidfd) {
    int flags = fcntl(pidfd, F_GETFD);
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    int ready = poll(&p, 1, 10000);
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int r = waitid(P_PIDFD, pidfd, &info, WEXITED);
    printf("%s: pidfd %s, cloexec %d, poll %d, waitid %d code %d status %d\n", what, pidfd >= 0 ? "yes" : "no",
           (flags & FD_CLOEXEC) != 0, ready, r, info.si_code, info.si_status);
    close(pidfd);
}

static char stack[64 << 10];

static int exec_true(void *arg) {
    (void)arg;
    execl("/bin/sh", "sh", "-c", "exit 5", (char *)0);
    _exit(127);
}

int main(void) {
    int pidfd = -1;
    long pid = syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, 0, &pidfd, 0, 0);
    if (pid == 0)
        _exit(3);
    report("fork-style", pidfd);

    pidfd = -1;
    pid = clone(exec_true, stack + sizeof stack, CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, 0, &pidfd);
    report("vfork-style, exec'd", pidfd);

    pidfd = -1;
    pid = syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, 0, &pidfd, 0, 0);
    if (pid == 0) {
        pause();
        _exit(0);
    }
    int sent = syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, 0, 0);
    siginfo_t info;
    memset(&info, 0, sizeof info);
    waitid(P_PIDFD, pidfd, &info, WEXITED);
    printf("signalled: %d, code %d, signal %d\n", sent, info.si_code, info.si_status);
    close(pidfd);

    int tid;
    long bad = syscall(SYS_clone, CLONE_PIDFD | CLONE_PARENT_SETTID | SIGCHLD, 0, &tid, 0, 0);
    if (bad == 0)
        _exit(0);
    printf("with CLONE_PARENT_SETTID: %ld %s\n", bad, bad < 0 ? strerrorname_np(errno) : "");
    printf("clone pidfd: done\n");
    return 0;
}
