// clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD) of a child that exits before any exec (Go's
// start-up probe, a spawn whose exec failed): the parent gets a pidfd that polls readable,
// and a wait on it (waitid P_PIDFD) or on the pid (wait4) reports the child's pid and exit
// status once; the other wait then finds nothing. With SIGCHLD as the exit signal exactly one
// SIGCHLD arrives; with none, the child is a "clone" child (__WCLONE). Compared with the
// native run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x1000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static volatile sig_atomic_t sigchlds;
static void on_chld(int sig) {
    (void)sig;
    sigchlds++;
}

// The child exits with `code` at once; returns its pid, and its pidfd in *pidfd.
static pid_t vfork_exit(unsigned long exit_signal, int code, int *pidfd) {
    unsigned long flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | exit_signal;
    long pid;
    register long r10 __asm__("r10") = 0;
    register long r8 __asm__("r8") = 0;
    // The child runs on the parent's stack until it exits: no C in it.
    __asm__ volatile("syscall\n\t"
                     "test %%rax, %%rax\n\t"
                     "jnz 1f\n\t"
                     "mov %[code], %%edi\n\t"
                     "mov $60, %%eax\n\t"
                     "syscall\n\t"
                     "1:"
                     : "=a"(pid)
                     : "0"(SYS_clone), "D"(flags), "S"(0L), "d"(pidfd), "r"(r10), "r"(r8), [code] "r"(code)
                     : "rcx", "r11", "memory");
    return pid;
}

static void one(const char *what, unsigned long exit_signal, int by_pidfd) {
    int pidfd = -1;
    sigchlds = 0;
    pid_t pid = vfork_exit(exit_signal, 3, &pidfd);
    printf("%s: clone %s, pidfd %s", what, pid > 0 ? "ok" : "failed", pidfd >= 0 ? "given" : "none");
    int flags = fcntl(pidfd, F_GETFD);
    printf(", cloexec %s", flags >= 0 && (flags & FD_CLOEXEC) ? "yes" : "no");
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    int n = poll(&p, 1, 60000);
    printf(", poll %d revents %s\n", n, p.revents & POLLIN ? "POLLIN" : "none");
    int wclone = exit_signal == SIGCHLD ? 0 : __WCLONE;
    if (by_pidfd == 2) {
        // Without an infop (the kernel allows a NULL one): the child is gone all the same.
        int r = syscall(SYS_waitid, P_PIDFD, pidfd, NULL, WEXITED | wclone, NULL);
        printf("  waitid(P_PIDFD, no infop) %d\n", r);
        errno = 0;
        int st = 0;
        r = waitpid(pid, &st, __WALL | WNOHANG);
        printf("  then waitpid(pid) %d errno %s\n", r, errno == ECHILD ? "ECHILD" : errno ? "other" : "0");
    } else if (by_pidfd) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        int r = syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED | wclone, NULL);
        printf("  waitid(P_PIDFD) %d: pid %s, code %s, status %d\n", r, si.si_pid == pid ? "the child's" : "other",
               si.si_code == CLD_EXITED ? "CLD_EXITED" : "other", si.si_status);
        errno = 0;
        int st = 0;
        r = waitpid(pid, &st, __WALL | WNOHANG);
        printf("  then waitpid(pid) %d errno %s\n", r, errno == ECHILD ? "ECHILD" : errno ? "other" : "0");
    } else {
        int st = 0;
        pid_t r = waitpid(pid, &st, wclone);
        printf("  waitpid(pid) %s, exited %d status %d\n", r == pid ? "the child" : "other", WIFEXITED(st), WEXITSTATUS(st));
        siginfo_t si;
        memset(&si, 0, sizeof si);
        errno = 0;
        r = syscall(SYS_waitid, P_PIDFD, pidfd, &si, WEXITED | WNOHANG | __WALL, NULL);
        printf("  then waitid(P_PIDFD) %d errno %s\n", r, errno == ECHILD ? "ECHILD" : errno ? "other" : "0");
    }
    errno = 0;
    int r = waitpid(-1, NULL, __WALL | WNOHANG);
    printf("  then waitpid(-1) %d errno %s; SIGCHLDs %d\n", r, errno == ECHILD ? "ECHILD" : errno ? "other" : "0",
           (int)sigchlds);
    close(pidfd);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sigaction(SIGCHLD, &sa, NULL);
    one("no exit signal, pidfd wait", 0, 1);
    one("no exit signal, pid wait", 0, 0);
    one("SIGCHLD, pidfd wait", SIGCHLD, 1);
    one("SIGCHLD, pid wait", SIGCHLD, 0);
    one("no exit signal, pidfd wait without infop", 0, 2);
    one("SIGCHLD, pidfd wait without infop", SIGCHLD, 2);
    return 0;
}
