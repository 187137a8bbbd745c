/* pidfd_open, pidfd_send_signal, poll on a pidfd and waitid(P_PIDFD): a child signalled and
 * waited for through its pidfd, our own pidfd (a signal to ourselves arrives before the call
 * returns), bad descriptors and flags. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static void on(int s) { got = s; }
static int pidfd_open(pid_t pid, unsigned flags) { return syscall(SYS_pidfd_open, pid, flags); }
static int send(int fd, int sig) { return syscall(SYS_pidfd_send_signal, fd, sig, 0, 0); }
static void show(const char *what, int r) { printf("%s: %s\n", what, r < 0 ? strerror(errno) : "ok"); }

int main(void) {
    setvbuf(stdout, 0, _IONBF, 0);
    signal(SIGUSR1, on);
    int me = pidfd_open(getpid(), 0);
    show("own pidfd", me);
    printf("close-on-exec: %d\n", (fcntl(me, F_GETFD) & FD_CLOEXEC) != 0);
    sigset_t blk, old;
    sigemptyset(&blk);
    sigaddset(&blk, SIGUSR1);
    sigprocmask(SIG_BLOCK, &blk, &old);
    show("signal 0 to ourselves", send(me, 0));
    show("SIGUSR1 to ourselves", send(me, SIGUSR1));
    sigset_t pend;
    sigpending(&pend);
    printf("pending before the call returned: %d\n", sigismember(&pend, SIGUSR1));
    sigprocmask(SIG_SETMASK, &old, 0);
    printf("handled: %d\n", got == SIGUSR1);
    siginfo_t si;
    show("waitid on our own pidfd", waitid(P_PIDFD, me, &si, WEXITED | WNOHANG));

    pid_t c = fork();
    if (c == 0) {
        pause();
        _exit(0);
    }
    int fd = pidfd_open(c, 0);
    show("child's pidfd", fd);
    struct pollfd p = {fd, POLLIN, 0};
    printf("poll before it ends: %d\n", poll(&p, 1, 0));
    show("SIGTERM through the pidfd", send(fd, SIGTERM));
    printf("poll until it ends: %d\n", poll(&p, 1, 10000));
    memset(&si, 0, sizeof si);
    show("waitid(P_PIDFD)", waitid(P_PIDFD, fd, &si, WEXITED));
    printf("pid matches %d, code %d (CLD_KILLED %d), status %d\n", si.si_pid == c, si.si_code, CLD_KILLED,
           si.si_status);
    show("signal after it was reaped", send(fd, SIGTERM));
    show("bad flags", pidfd_open(getpid(), 1));
    show("not a pidfd", send(1, SIGTERM));
    show("not a descriptor", send(99, SIGTERM));
    show("pid 0", pidfd_open(0, 0));
    return 0;
}
