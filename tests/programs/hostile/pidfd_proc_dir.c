// pidfd_send_signal through a /proc/<pid> directory descriptor, which Linux takes as a pidfd
// (psmisc's killall signals that way): a child is stopped, continued and ended by it, a signal
// to the caller's own directory (/proc/self, /proc/<own pid>) is pending before the call
// returns; a thread's /proc/<pid>/task/<tid>, another /proc directory, a regular file and a
// pidfd_open pidfd after its process was reaped answer as Linux does. Compared with the native
// run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHOW_WIDTH 44
#include "show.h"

static long send_through(int fd, int sig) { return syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0); }

static int open_dir(const char *fmt, long n) {
    char path[64];
    snprintf(path, sizeof path, fmt, n);
    return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static void status(const char *what, int st) {
    if (WIFSTOPPED(st))
        printf("%-*s stopped by %d\n", SHOW_WIDTH, what, WSTOPSIG(st));
    else if (WIFCONTINUED(st))
        printf("%-*s continued\n", SHOW_WIDTH, what);
    else if (WIFSIGNALED(st))
        printf("%-*s killed by %d\n", SHOW_WIDTH, what, WTERMSIG(st));
    else
        printf("%-*s exited %d\n", SHOW_WIDTH, what, WEXITSTATUS(st));
}

static void pending(const char *what, int sig) {
    sigset_t p;
    sigpending(&p);
    printf("%-*s %d\n", SHOW_WIDTH, what, sigismember(&p, sig));
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int st;

    // A child, through its /proc directory.
    pid_t c = fork();
    if (c == 0) {
        for (;;)
            pause();
    }
    int dir = open_dir("/proc/%ld", c);
    show("child's directory: signal 0", send_through(dir, 0));
    show("SIGSTOP", send_through(dir, SIGSTOP));
    waitpid(c, &st, WUNTRACED);
    status("child", st);
    show("SIGCONT", send_through(dir, SIGCONT));
    waitpid(c, &st, WCONTINUED);
    status("child", st);
    show("SIGTERM", send_through(dir, SIGTERM));
    waitpid(c, &st, 0);
    status("child", st);
    show("after it was reaped: signal 0", send_through(dir, 0));
    show("after it was reaped: SIGTERM", send_through(dir, SIGTERM));
    close(dir);

    // A child that execs another program (killall's case: a process by name).
    c = fork();
    if (c == 0) {
        execl("/bin/sleep", "sleep", "100", (char *)NULL);
        _exit(127);
    }
    dir = open_dir("/proc/%ld", c);
    show("exec'd child's directory: SIGKILL", send_through(dir, SIGKILL));
    waitpid(c, &st, 0);
    status("exec'd child", st);
    close(dir);

    // The caller itself: the signal is pending when the call returns.
    sigset_t usr;
    sigemptyset(&usr);
    sigaddset(&usr, SIGUSR1);
    sigaddset(&usr, SIGUSR2);
    sigprocmask(SIG_BLOCK, &usr, NULL);
    int self = open("/proc/self", O_RDONLY | O_DIRECTORY);
    show("/proc/self: SIGUSR1", send_through(self, SIGUSR1));
    pending("SIGUSR1 pending", SIGUSR1);
    int own = open_dir("/proc/%ld", getpid());
    show("/proc/<own pid>: SIGUSR2", send_through(own, SIGUSR2));
    pending("SIGUSR2 pending", SIGUSR2);
    show("/proc/self: bad signal", send_through(self, 99));
    show("/proc/self: unknown flag", syscall(SYS_pidfd_send_signal, self, 0, NULL, 0x100));

    // Descriptors Linux does not take.
    int task = open_dir("/proc/self/task/%ld", gettid());
    show("a thread's task directory", send_through(task, 0));
    int fdd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY);
    show("/proc/self/fd", send_through(fdd, 0));
    int procroot = open("/proc", O_RDONLY | O_DIRECTORY);
    show("/proc itself", send_through(procroot, 0));
    int file = open("/proc/self/stat", O_RDONLY);
    show("/proc/self/stat, a file", send_through(file, 0));
    int path = open("/proc/self", O_PATH | O_DIRECTORY);
    show("/proc/self opened O_PATH", send_through(path, 0));
    show("no descriptor", send_through(999, 0));
    return 0;
}
