/* What a forked child's exec carries into the new program (Linux's execve rules): the pid and
 * parent, the working directory, descriptors without FD_CLOEXEC at their numbers (the others
 * closed), ignored signals ignored and handled ones default (SIGPIPE default even where the
 * parent ignored nothing: the new program dies of it), the signal mask, umask, RLIMIT_NOFILE,
 * the exit status and a death by signal back to the parent; errors of an exec that fails
 * (ENOENT, EACCES, ENOEXEC) returned to the child; a memfd's fexecve. The new program is
 * this one, started as "report", and prints what it finds, with the CPUs it sees (under `hrt run --children host`
 * the forked child's exec starts a host program, which sees the host's CPUs, as natively).
 * Usage: procs_fork_exec_state [report PARENT_PID CHILD_PID MODE] */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ended.h"

extern char **environ;

static void on_usr2(int sig) { (void)sig; }

/* The new program: one line per property, relations rather than pids. */
static int report(pid_t parent, pid_t child, const char *mode) {
    printf("report: pid is the child's %d, parent is the forker %d\n", getpid() == child, getppid() == parent);
    char cwd[256];
    printf("report: cwd %s\n", getcwd(cwd, sizeof cwd) ? cwd : "?");
    printf("report: open fds above 2:");
    for (int fd = 3; fd < 64; fd++)
        if (fcntl(fd, F_GETFD) != -1)
            printf(" %d", fd);
    printf("\n");
    char buf[32] = {0};
    if (pread(7, buf, sizeof buf - 1, 0) > 0)
        printf("report: fd 7 reads \"%s\"\n", buf);
    printf("report: ignored:");
    for (int s = 1; s < 32; s++) {
        struct sigaction sa;
        if (sigaction(s, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
            printf(" %d", s);
    }
    printf("\nreport: handled:");
    for (int s = 1; s < 32; s++) {
        struct sigaction sa;
        if (sigaction(s, NULL, &sa) == 0 && sa.sa_handler != SIG_IGN && sa.sa_handler != SIG_DFL)
            printf(" %d", s);
    }
    sigset_t now;
    sigprocmask(SIG_SETMASK, NULL, &now);
    printf("\nreport: blocked:");
    for (int s = 1; s < 32; s++)
        if (sigismember(&now, s))
            printf(" %d", s);
    mode_t m = umask(0);
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    printf("\nreport: umask %03o, RLIMIT_NOFILE %llu\n", (unsigned)m, (unsigned long long)rl.rlim_cur);
    cpu_set_t set;
    CPU_ZERO(&set);
    sched_getaffinity(0, sizeof set, &set);
    printf("report: %ld CPUs, may run on %d\n", sysconf(_SC_NPROCESSORS_ONLN), CPU_COUNT(&set));
    fflush(stdout);
    if (strcmp(mode, "pipe") == 0) {
        int fds[2];
        if (pipe(fds) == 0) {
            close(fds[0]);
            (void)!write(fds[1], "x", 1); /* SIGPIPE, default: the process dies of it */
        }
        printf("report: survived a write to a closed pipe\n");
    }
    return 3;
}

/* Forks a child that sets up its state and execs this program as "report MODE". */
static void run_child(const char *self, const char *mode) {
    fflush(stdout);
    pid_t parent = getpid();
    pid_t p = fork();
    if (p == 0) {
        if (chdir("/tmp") != 0)
            _exit(20);
        int fd = open("/tmp", O_RDONLY | O_DIRECTORY);
        char path[] = "/tmp/procs_fork_exec_state.XXXXXX";
        int f = mkstemp(path);
        if (fd < 0 || f < 0 || write(f, "kept across exec", 16) != 16)
            _exit(21);
        unlink(path);
        dup2(f, 7);
        close(f);
        if (dup3(fd, 9, O_CLOEXEC) != 9)
            _exit(22);
        signal(SIGINT, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        signal(SIGUSR2, on_usr2);
        signal(SIGPIPE, SIG_DFL);
        sigset_t block;
        sigemptyset(&block);
        sigaddset(&block, SIGUSR1);
        sigprocmask(SIG_BLOCK, &block, NULL);
        umask(027);
        struct rlimit rl;
        getrlimit(RLIMIT_NOFILE, &rl);
        rl.rlim_cur = 100;
        setrlimit(RLIMIT_NOFILE, &rl);
        char a1[16], a2[16];
        snprintf(a1, sizeof a1, "%d", (int)parent);
        snprintf(a2, sizeof a2, "%d", (int)getpid());
        char *argv[] = {(char *)self, "report", a1, a2, (char *)mode, NULL};
        execve(self, argv, environ);
        _exit(errno);
    }
    printf("child (%s): %s\n", mode, ended(p));
}

/* An exec that fails: the child gets the error and goes on. */
static void failing_exec(const char *what, const char *path) {
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        char *argv[] = {(char *)path, NULL};
        execve(path, argv, environ);
        printf("exec of %s: %s\n", what, strerror(errno));
        fflush(stdout);
        _exit(5);
    }
    printf("failing exec child: %s\n", ended(p));
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "report") == 0)
        return argc == 5 ? report((pid_t)atoi(argv[2]), (pid_t)atoi(argv[3]), argv[4]) : 2;
    /* Never a second time in one tree (a broken exec must not fork without end). */
    if (getenv("PROCS_FORK_EXEC_STATE"))
        return 98;
    setenv("PROCS_FORK_EXEC_STATE", "1", 1);
    /* The program's own path, as a host program can open it. */
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return 1;
    self[n] = 0;
    run_child(self, "plain");
    run_child(self, "pipe");
    failing_exec("a missing file", "/nonexistent/program");
    char text[] = "/tmp/procs_fork_exec_state.txtXXXXXX";
    int t = mkstemp(text);
    if (t >= 0) {
        (void)!write(t, "plain text\n", 11);
        close(t);
        failing_exec("a file without execute permission", text);
        chmod(text, 0755);
        failing_exec("a text file", text);
        unlink(text);
    }
    /* fexecve of a file with no path (a memfd holding /bin/echo): the exec reads it through
     * the descriptor. */
    int in = open("/bin/echo", O_RDONLY), mem = memfd_create("echo", MFD_CLOEXEC);
    char copy[65536];
    ssize_t got;
    while (in >= 0 && mem >= 0 && (got = read(in, copy, sizeof copy)) > 0)
        if (write(mem, copy, (size_t)got) != got)
            break;
    fflush(stdout);
    pid_t q = fork();
    if (q == 0) {
        char *argv[] = {"echo", "fexecve of a memfd", NULL};
        fexecve(mem, argv, environ);
        printf("fexecve: %s\n", strerror(errno));
        fflush(stdout);
        _exit(6);
    }
    printf("fexecve child: %s\n", ended(q));
    if (in >= 0)
        close(in);

    /* The same from a child that is itself a forked child's child. */
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        run_child(self, "grandchild");
        fflush(stdout);
        _exit(0);
    }
    printf("middle child: %s\n", ended(p));
    return 0;
}
