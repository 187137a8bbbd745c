// clone with CLONE_PIDFD: the parent gets a pidfd (close-on-exec) of its child, fork-style
// and vfork-style (CLONE_VM | CLONE_VFORK, as Go's os/exec starts processes): it polls
// readable once the child has ended, waitid(P_PIDFD) reaps it with its status, and
// pidfd_send_signal reaches it. CLONE_PIDFD with CLONE_PARENT_SETTID is EINVAL for clone (one
// address for both), and works with clone3 (two): the pidfd and the parent's copy of the pid.
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

// clone3's arguments, CLONE_ARGS_SIZE_VER0.
struct clone3_args {
    unsigned long long flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

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

    pidfd = -1;
    int parent_tid = 0;
    struct clone3_args args = {.flags = CLONE_PIDFD | CLONE_PARENT_SETTID,
                               .pidfd = (unsigned long)&pidfd,
                               .parent_tid = (unsigned long)&parent_tid,
                               .exit_signal = SIGCHLD};
    pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0)
        _exit(4);
    printf("clone3 with CLONE_PIDFD and CLONE_PARENT_SETTID: %s, the pid at parent_tid %d\n",
           pid > 0 ? "a child" : strerrorname_np(errno), pid > 0 && parent_tid == pid);
    if (pid > 0)
        report("  its pidfd", pidfd);
    printf("clone pidfd: done\n");
    return 0;
}
