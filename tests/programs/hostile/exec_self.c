// execve in the program itself (not a vfork child): the image is replaced in place.
// `exec_self` (no argument): first every failing exec (each errno printed, the program goes
// on), then it sets up state that execve keeps or drops (descriptors with and without
// FD_CLOEXEC, a handled and an ignored signal, a blocked pending signal, an alternate stack,
// alarm, a POSIX timer, 64 MiB of memory and 4 MiB of break full of a pattern, two more threads, one spinning
// and one blocked in a read) and execs itself from a thread that is not the main one, with
// `after` and what the new image should check. One line per check; the test compares the
// output and status with a native run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "report.h"

#define AREA (64UL << 20)
#define PATTERN 0x5a
#define BREAK (4UL << 20)

extern char **environ;
static const char *self;
static char dir[] = "/tmp/hrt-exec-XXXXXX";

static void on_usr1(int sig) { (void)sig; }

static void write_file(const char *name, const char *text, mode_t mode) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0 || write(fd, text, strlen(text)) < 0)
        perror(path), exit(2);
    close(fd);
    chmod(path, mode);
}

static void try_exec(const char *what, const char *path, char *const *argv, char *const *envp) {
    long r = syscall(SYS_execve, path, argv, envp);
    report(what, r);
}

static void failing_execs(void) {
    char *argv[] = {"x", NULL};
    char *env[] = {NULL};
    char path[256];
    if (!mkdtemp(dir))
        perror("mkdtemp"), exit(2);
    try_exec("missing file", "/nonexistent/prog", argv, env);
    try_exec("directory", "/tmp", argv, env);
    try_exec("not a directory", "/etc/passwd/x", argv, env);
    write_file("noexec", "#!/bin/sh\n", 0644);
    snprintf(path, sizeof path, "%s/noexec", dir);
    try_exec("no execute permission", path, argv, env);
    write_file("garbage", "hello, not a program\n", 0755);
    snprintf(path, sizeof path, "%s/garbage", dir);
    try_exec("not an executable", path, argv, env);
    write_file("badinterp", "#!/nonexistent/interpreter\n", 0755);
    snprintf(path, sizeof path, "%s/badinterp", dir);
    try_exec("missing interpreter", path, argv, env);
    char line[300];
    snprintf(line, sizeof line, "#!%s/loop\n", dir);
    write_file("loop", line, 0755);
    snprintf(path, sizeof path, "%s/loop", dir);
    try_exec("script naming itself", path, argv, env);
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/la", dir);
    snprintf(b, sizeof b, "%s/lb", dir);
    if (symlink(b, a) != 0 || symlink(a, b) != 0)
        perror("symlink"), exit(2);
    try_exec("symlink loop", a, argv, env);
    char *longname = malloc(5000);
    memset(longname, 'a', 4999);
    longname[0] = '/';
    longname[4999] = 0;
    try_exec("name too long", longname, argv, env);
    // Through a volatile: the compiler must not see the constants (it warns about them).
    volatile uintptr_t low = 8;
    try_exec("path unmapped", (const char *)low, argv, env);
    try_exec("argv unmapped", self, (char *const *)low, env);
    char *bad_entry[] = {"x", (char *)low, NULL};
    try_exec("argv entry unmapped", self, bad_entry, env);
    try_exec("envp unmapped", self, argv, (char *const *)(low + 8));
    char *big = malloc(200000);
    memset(big, 'b', 199999);
    big[199999] = 0;
    char *big_argv[] = {"x", big, NULL};
    try_exec("argument too long", self, big_argv, env);
    report("execveat bad flags", syscall(SYS_execveat, AT_FDCWD, self, argv, env, 0x8));
    report("execveat empty path without flag", syscall(SYS_execveat, AT_FDCWD, "", argv, env, 0));
    // Everything is still here.
    printf("still running: %d\n", getpid() == syscall(SYS_gettid));
    static const char *const made[] = {"noexec", "garbage", "badinterp", "loop", "la", "lb"};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, made[i]);
        unlink(path);
    }
    rmdir(dir);
}

static int pipefd[2];
static volatile int spin_go = 1;

static void *spinner(void *arg) {
    (void)arg;
    while (spin_go)
        ;
    return NULL;
}

static void *reader(void *arg) {
    (void)arg;
    char c;
    // Never answered: the exec must end this thread while it waits.
    ssize_t n = read(pipefd[0], &c, 1);
    printf("reader returned %zd\n", n);
    return NULL;
}

static char args_buf[8][64];

static void *execer(void *arg) {
    char **argv = arg;
    char *env[] = {"HRT_EXEC_TEST=kept", NULL};
    // With the alternate stack and mask of this thread.
    stack_t ss = {.ss_sp = malloc(65536), .ss_size = 65536};
    sigaltstack(&ss, NULL);
    sigset_t hup;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &hup, NULL);
    tgkill(getpid(), gettid(), SIGHUP);
    syscall(SYS_execve, self, argv, env);
    perror("exec");
    exit(3);
}

static int start(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    failing_execs();
    int kept = open("/dev/null", O_RDONLY);
    int closed = open("/dev/null", O_RDONLY | O_CLOEXEC);
    struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGUSR2, SIG_IGN);
    alarm(1000);
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR2};
    timer_t timer;
    timer_create(CLOCK_MONOTONIC, &ev, &timer);
    struct itimerspec its = {.it_value = {.tv_sec = 1000}};
    timer_settime(timer, 0, &its, NULL);
    unsigned char *area = mmap(NULL, AREA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(area, PATTERN, AREA);
    // The break too: the new image's break starts at the same address (HRT clears the old
    // image's pages where they are for the new one, natively they are new pages).
    unsigned char *heap = sbrk(BREAK);
    if (heap != (void *)-1)
        memset(heap, PATTERN, BREAK);
    if (pipe(pipefd) != 0)
        return 2;
    pthread_t t1, t2, t3;
    pthread_create(&t1, NULL, spinner, NULL);
    pthread_create(&t2, NULL, reader, NULL);
    snprintf(args_buf[0], 64, "%s", self);
    snprintf(args_buf[1], 64, "after");
    snprintf(args_buf[2], 64, "%d", kept);
    snprintf(args_buf[3], 64, "%d", closed);
    snprintf(args_buf[4], 64, "%p", (void *)area);
    snprintf(args_buf[5], 64, "%ld", (long)(intptr_t)timer);
    snprintf(args_buf[6], 64, "%d", getpid());
    static char *argv[8];
    for (int i = 0; i < 7; i++)
        argv[i] = args_buf[i];
    argv[7] = NULL;
    pthread_create(&t3, NULL, execer, argv);
    pthread_join(t3, NULL);
    return 4;
}

static int after(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 7)
        return 5;
    printf("argc: %d\n", argc);
    printf("env: %s (%s)\n", getenv("HRT_EXEC_TEST"), environ[1] ? "more" : "one");
    printf("pid kept: %d\n", getpid() == atoi(argv[6]));
    printf("leader: %d\n", getpid() == syscall(SYS_gettid));
    printf("fd without cloexec: %d\n", fcntl(atoi(argv[2]), F_GETFD));
    report("fd with cloexec", fcntl(atoi(argv[3]), F_GETFD));
    struct sigaction sa;
    sigaction(SIGUSR1, NULL, &sa);
    printf("handled SIGUSR1 now default: %d (flags %#x)\n", sa.sa_handler == SIG_DFL, sa.sa_flags & ~0x04000000);
    sigaction(SIGUSR2, NULL, &sa);
    printf("ignored SIGUSR2 still ignored: %d\n", sa.sa_handler == SIG_IGN);
    sigset_t set;
    sigprocmask(SIG_BLOCK, NULL, &set);
    printf("SIGHUP still blocked: %d\n", sigismember(&set, SIGHUP));
    sigpending(&set);
    printf("SIGHUP still pending: %d\n", sigismember(&set, SIGHUP));
    stack_t ss;
    sigaltstack(NULL, &ss);
    printf("alternate stack gone: %d\n", (ss.ss_flags & SS_DISABLE) != 0);
    unsigned left = alarm(0);
    printf("alarm kept: %d\n", left > 900 && left <= 1000);
    struct itimerspec its;
    report("POSIX timer gone", syscall(SYS_timer_gettime, atol(argv[5]), &its));
    // The old image's memory: unmapped, or (reused) reading zero.
    unsigned char *old = (unsigned char *)strtoul(argv[4], NULL, 16);
    unsigned char vec[1];
    int old_gone = mincore(old, 4096, vec) != 0 && errno == ENOMEM;
    if (!old_gone)
        old_gone = old[0] != PATTERN;
    printf("old memory gone: %d\n", old_gone);
    unsigned char *fresh = mmap(NULL, AREA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    size_t nonzero = 0;
    for (size_t i = 0; i < AREA; i += 512)
        nonzero += fresh[i] != 0;
    printf("fresh memory zero: %d\n", nonzero == 0);
    unsigned char *heap = sbrk(BREAK);
    nonzero = heap == (void *)-1;
    for (size_t i = 0; heap != (void *)-1 && i < BREAK; i += 64)
        nonzero += heap[i] != 0;
    printf("new break zero: %d\n", nonzero == 0);
    char comm[32] = {0};
    int fd = open("/proc/self/comm", O_RDONLY);
    if (fd >= 0 && read(fd, comm, sizeof comm - 1) > 0)
        printf("comm: %s", comm);
    char exe[4096] = {0}, want[4096] = {0};
    if (readlink("/proc/self/exe", exe, sizeof exe - 1) > 0 && realpath(argv[0], want))
        printf("exe is the new program: %d\n", strcmp(exe, want) == 0);
    char cmdline[256] = {0};
    fd = open("/proc/self/cmdline", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, cmdline, sizeof cmdline) : -1;
    printf("cmdline second word: %s\n", n > 0 ? cmdline + strlen(cmdline) + 1 : "?");
    return 42;
}

int main(int argc, char **argv) {
    self = argv[0];
    if (argc > 1 && strcmp(argv[1], "after") == 0)
        return after(argc, argv);
    // `run PROG ARGS...`: exec PROG (resolved by the caller) with HRT_EXEC_TEST added.
    if (argc > 2 && strcmp(argv[1], "run") == 0) {
        setenv("HRT_EXEC_TEST", "passed on", 1);
        execv(argv[2], argv + 2);
        perror("execv");
        return 127;
    }
    // `fexec ARGS...`: execveat(fd of itself, "", AT_EMPTY_PATH) with `ARGS...` (fexecve).
    if (argc > 2 && strcmp(argv[1], "fexec") == 0) {
        int fd = open(self, O_PATH | O_CLOEXEC);
        argv[1] = (char *)self;
        syscall(SYS_execveat, fd, "", argv + 1, environ, AT_EMPTY_PATH);
        perror("execveat");
        return 127;
    }
    // `loop N`: exec itself N more times (exec's cost), then exit 0.
    if (argc > 2 && strcmp(argv[1], "loop") == 0) {
        int n = atoi(argv[2]);
        if (n == 0)
            return 0;
        char next[16];
        snprintf(next, sizeof next, "%d", n - 1);
        execl(self, self, "loop", next, (char *)NULL);
        return 127;
    }
    return start();
}
