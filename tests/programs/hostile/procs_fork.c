/* fork() without exec: exit statuses, separate memory, pipes between parent and child, the
 * child's identity, state a child inherits (FPU mode, TLS, signal mask and handlers, stdio),
 * forks from threads, nested and repeated forks, a child killed by a signal, a child that
 * grows far past the memory its parent used. One line per case;
 * no pid is printed (they differ between runs), only relations between them.
 * Usage: procs_fork [CASE]   (no CASE: every case) */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cpus.h"
#include "ended.h"

static int global = 1;
static __thread int tls = 5;

static void exit_status(void) {
    pid_t p = fork();
    if (p == 0)
        _exit(7);
    printf("exit status: %s\n", p > 0 ? ended(p) : "fork failed");
}

static void exit_flushes(void) {
    printf("exit flushes: ");
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        printf("child's buffered line\n");
        exit(3);
    }
    printf("%s\n", ended(p));
}

static void memory_separate(void) {
    char *heap = malloc(64);
    strcpy(heap, "parent's heap");
    global = 1;
    pid_t p = fork();
    if (p == 0) {
        int saw = global == 1 && strcmp(heap, "parent's heap") == 0;
        global = 2;
        strcpy(heap, "child's heap");
        _exit(saw ? 10 + global : 1);
    }
    const char *how = ended(p);
    printf("memory: child %s; parent sees global %d, heap \"%s\"\n", how, global, heap);
    free(heap);
}

static void big_memory(void) {
    size_t n = 64 << 20;
    unsigned char *m = malloc(n);
    memset(m, 0x5a, n);
    pid_t p = fork();
    if (p == 0) {
        size_t bad = 0;
        for (size_t i = 0; i < n; i += 4096)
            bad += m[i] != 0x5a;
        memset(m, 0x11, n);
        _exit(bad == 0 ? 0 : 1);
    }
    const char *how = ended(p);
    size_t changed = 0;
    for (size_t i = 0; i < n; i += 4096)
        changed += m[i] != 0x5a;
    printf("64 MiB: child %s, parent's pages changed: %zu\n", how, changed);
    free(m);
}

/* Touches every page of `mb` MiB of fresh memory; how many pages did not read back. */
static size_t touch_fresh(size_t mb) {
    size_t n = mb << 20, bad = 0;
    unsigned char *m = malloc(n);
    if (!m)
        return n;
    for (size_t i = 0; i < n; i += 4096) {
        bad += m[i] != 0;
        m[i] = (unsigned char)(i >> 12);
    }
    for (size_t i = 0; i < n; i += 4096)
        bad += m[i] != (unsigned char)(i >> 12);
    free(m);
    return bad;
}

/* A child (and its child) using far more memory than the parent had when it forked: the
 * child's VM is given the pool the parent used, and its kernel asks for the rest. */
static void grows(void) {
    pid_t p = fork();
    if (p == 0) {
        size_t bad = touch_fresh(1536);
        pid_t q = fork();
        if (q == 0)
            _exit(touch_fresh(768) == 0 ? 0 : 1);
        int st = 0;
        waitpid(q, &st, 0);
        _exit(bad == 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1);
    }
    printf("child growing to 1.5 GiB, its child 768 MiB: %s\n", ended(p));
}

/* Reads `fd` until EOF into `buf` (NUL-terminated, at most `cap` - 1 bytes). */
static void read_all(int fd, char *buf, size_t cap) {
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd, buf + got, cap - 1 - got)) > 0)
        got += r;
    buf[got] = 0;
}

static void pipes(void) {
    int up[2], down[2];
    if (pipe(up) || pipe(down)) {
        printf("pipes: pipe failed\n");
        return;
    }
    pid_t p = fork();
    if (p == 0) {
        close(up[0]);
        close(down[1]);
        char buf[64];
        read_all(down[0], buf, sizeof buf);
        char reply[128];
        int len = snprintf(reply, sizeof reply, "child read \"%s\" then EOF", buf);
        if (write(up[1], reply, len) != len)
            _exit(1);
        _exit(0);
    }
    close(up[1]);
    close(down[0]);
    if (write(down[1], "to child", 8) != 8)
        printf("pipes: write failed\n");
    close(down[1]);
    char buf[128];
    read_all(up[0], buf, sizeof buf);
    close(up[0]);
    printf("pipes: %s; child %s\n", buf, ended(p));
}

static void identity(void) {
    pid_t parent = getpid();
    int fd[2];
    if (pipe(fd))
        return;
    pid_t p = fork();
    if (p == 0) {
        pid_t ids[3] = {getpid(), getppid(), (pid_t)gettid()};
        if (write(fd[1], ids, sizeof ids) != sizeof ids)
            _exit(1);
        _exit(0);
    }
    pid_t ids[3] = {0};
    if (read(fd[0], ids, sizeof ids) != sizeof ids)
        printf("identity: read failed\n");
    close(fd[0]);
    close(fd[1]);
    printf("identity: child's getpid is fork's result: %d, its getppid is the parent: %d, tid = pid: %d, "
           "differs from the parent: %d; child %s\n",
           ids[0] == p, ids[1] == parent, ids[2] == ids[0], p != parent, ended(p));
}

static volatile sig_atomic_t usr2_seen;
static void on_usr2(int sig) { usr2_seen = sig; }

/* SSE rounding mode (MXCSR bits 13-14; no libm needed). */
#define ROUND_MASK 0x6000u
#define ROUND_UP 0x4000u
static unsigned rounding(void) { return __builtin_ia32_stmxcsr() & ROUND_MASK; }
static void set_rounding(unsigned mode) { __builtin_ia32_ldmxcsr((__builtin_ia32_stmxcsr() & ~ROUND_MASK) | mode); }

static void inherited(void) {
    set_rounding(ROUND_UP);
    volatile double third = 1.0 / 3.0;
    tls = 42;
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigprocmask(SIG_BLOCK, &block, &old);
    signal(SIGUSR2, on_usr2);
    pid_t p = fork();
    if (p == 0) {
        volatile double again = 1.0 / 3.0;
        sigset_t now;
        sigprocmask(SIG_BLOCK, NULL, &now);
        raise(SIGUSR2);
        int code = (rounding() == ROUND_UP) | (again == third) << 1 | (tls == 42) << 2 |
                   sigismember(&now, SIGUSR1) << 3 | (usr2_seen == SIGUSR2) << 4;
        _exit(code);
    }
    printf("inherited (rounding, FPU result, TLS, mask, handler = 31): %s\n", ended(p));
    set_rounding(0);
    tls = 5;
    sigprocmask(SIG_SETMASK, &old, NULL);
    signal(SIGUSR2, SIG_DFL);
}

static void killed(void) {
    int fd[2];
    if (pipe(fd))
        return;
    pid_t p = fork();
    if (p == 0) {
        close(fd[0]);
        if (write(fd[1], "r", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    close(fd[1]);
    char c;
    if (read(fd[0], &c, 1) != 1)
        printf("killed: read failed\n");
    close(fd[0]);
    kill(p, SIGTERM);
    printf("killed: %s\n", ended(p));
}

static void segfault(void) {
    pid_t p = fork();
    if (p == 0) {
        *(volatile int *)16 = 1;
        _exit(0);
    }
    printf("segfault in the child: %s\n", ended(p));
}

static long long ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Time goes on in the child from where the parent's was. */
static void clocks(void) {
    long long mono = ns(CLOCK_MONOTONIC), real = ns(CLOCK_REALTIME);
    pid_t p = fork();
    if (p == 0) {
        long long dm = ns(CLOCK_MONOTONIC) - mono, dr = ns(CLOCK_REALTIME) - real;
        long long cpu = ns(CLOCK_PROCESS_CPUTIME_ID);
        int code = (dm >= 0 && dm < 5000000000LL) | (dr > -100000000LL && dr < 5000000000LL) << 1 |
                   (cpu >= 0 && cpu < 1000000000LL) << 2;
        _exit(code);
    }
    printf("clocks (monotonic, realtime, child CPU time = 7): %s\n", ended(p));
}

static void nested(void) {
    pid_t p = fork();
    if (p == 0) {
        pid_t q = fork();
        if (q == 0)
            _exit(3);
        int st = 0;
        if (waitpid(q, &st, 0) != q || !WIFEXITED(st))
            _exit(1);
        _exit(WEXITSTATUS(st) + 10);
    }
    printf("nested: %s\n", ended(p));
}

static void many(void) {
    int sum = 0, ok = 0;
    for (int i = 1; i <= 20; i++) {
        pid_t p = fork();
        if (p == 0)
            _exit(i);
        int st = 0;
        if (waitpid(p, &st, 0) == p && WIFEXITED(st)) {
            sum += WEXITSTATUS(st);
            ok++;
        }
    }
    printf("20 forks: %d waited, sum of statuses %d\n", ok, sum);
}

static void wait_any(void) {
    pid_t a = fork();
    if (a == 0)
        _exit(1);
    pid_t b = fork();
    if (b == 0)
        _exit(2);
    int seen = 0, st;
    pid_t w;
    while ((w = wait(&st)) > 0)
        seen |= (w == a && WEXITSTATUS(st) == 1) | (w == b && WEXITSTATUS(st) == 2) << 1;
    printf("wait for any: both seen %d, then errno %d\n", seen == 3, errno);
}

/* Threads that stay busy (spinning, sleeping, blocked on a mutex) while the main thread forks. */
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;

static void *spinner(void *arg) {
    (void)arg;
    while (!stop)
        ;
    return NULL;
}

static void *sleeper(void *arg) {
    (void)arg;
    while (!stop)
        usleep(1000);
    return NULL;
}

static void *blocked(void *arg) {
    (void)arg;
    pthread_mutex_lock(&held);
    pthread_mutex_unlock(&held);
    return NULL;
}

static int reader_pipe[2];

static void *reader(void *arg) {
    (void)arg;
    char c = 0;
    return (void *)(long)(read(reader_pipe[0], &c, 1) == 1 ? c : -1);
}

static void *child_thread(void *arg) { return (char *)arg + 1; }

static void threads(void) {
    pthread_t t[4];
    stop = 0;
    if (pipe(reader_pipe))
        return;
    pthread_mutex_lock(&held);
    pthread_create(&t[0], NULL, spinner, NULL);
    pthread_create(&t[1], NULL, sleeper, NULL);
    pthread_create(&t[2], NULL, blocked, NULL);
    pthread_create(&t[3], NULL, reader, NULL);
    usleep(20000);
    pid_t p = fork();
    if (p == 0) {
        /* Only this thread exists here: malloc, stdio and new threads work. */
        void *r = NULL;
        pthread_t c;
        char *m = malloc(100);
        int ok = m != NULL && pthread_create(&c, NULL, child_thread, (void *)41) == 0 && pthread_join(c, &r) == 0 &&
                 r == (void *)42;
        free(m);
        /* The parent's reader waits in read(): what the child writes reaches it. */
        ok = ok && write(reader_pipe[1], "c", 1) == 1;
        _exit(ok ? 9 : 1);
    }
    const char *how = ended(p);
    stop = 1;
    pthread_mutex_unlock(&held);
    void *got[4];
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], &got[i]);
    close(reader_pipe[0]);
    close(reader_pipe[1]);
    printf("fork with 4 busy threads (spinning, sleeping, on a mutex, in read): child %s, reader got '%c'\n", how,
           (char)(long)got[3]);
}

static void *forking_thread(void *arg) {
    (void)arg;
    pid_t p = fork();
    if (p == 0)
        _exit(gettid() == getpid() ? 4 : 1);
    return (void *)(long)p;
}

static void from_thread(void) {
    pthread_t t;
    void *r;
    pthread_create(&t, NULL, forking_thread, NULL);
    pthread_join(t, &r);
    printf("fork from a second thread: child %s\n", ended((pid_t)(long)r));
}

/* Two threads forking at once (the kernel serialises the forks). */
static void *fork_five(void *arg) {
    long sum = 0;
    for (int i = 0; i < 5; i++) {
        pid_t p = fork();
        if (p == 0)
            _exit((int)(long)arg + i);
        int st = 0;
        if (waitpid(p, &st, 0) == p && WIFEXITED(st))
            sum += WEXITSTATUS(st);
    }
    return (void *)sum;
}

static void concurrent(void) {
    pthread_t a, b;
    void *ra, *rb;
    pthread_create(&a, NULL, fork_five, (void *)10);
    pthread_create(&b, NULL, fork_five, (void *)20);
    pthread_join(a, &ra);
    pthread_join(b, &rb);
    printf("two threads forking at once: sums %ld and %ld\n", (long)ra, (long)rb);
}

/* Where a child runs: pinned to the last CPU by its parent, and pinning itself and a new thread
 * there (a forked child's kernel starts its other CPUs only when a thread first goes to one). */
static int pin_to(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    return sched_setaffinity(0, sizeof s, &s);
}

static void *runs_on(void *arg) {
    return (void *)(long)(pin_to((int)(long)arg) == 0 ? sched_getcpu() : -1);
}

static void placed(void) {
    cpu_set_t all;
    sched_getaffinity(0, sizeof all, &all);
    int last = last_allowed_cpu();
    pin_to(last);
    pid_t p = fork();
    if (p == 0)
        _exit(sched_getcpu() == last ? 3 : 1);
    char pinned[64];
    snprintf(pinned, sizeof pinned, "%s", ended(p));
    sched_setaffinity(0, sizeof all, &all);
    p = fork();
    if (p == 0) {
        int ok = pin_to(last) == 0 && sched_getcpu() == last;
        ok = ok && sched_setaffinity(0, sizeof all, &all) == 0;
        pthread_t t;
        void *r = NULL;
        ok = ok && pthread_create(&t, NULL, runs_on, (void *)(long)last) == 0 && pthread_join(t, &r) == 0 &&
             (long)r == last;
        _exit(ok ? 4 : 1);
    }
    printf("children on the last CPU: of a pinned parent %s, pinning themselves %s\n", pinned, ended(p));
}

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {
    {"exit", exit_status}, {"flush", exit_flushes}, {"memory", memory_separate}, {"big", big_memory},
    {"grows", grows},
    {"pipes", pipes},      {"identity", identity},  {"inherited", inherited},    {"killed", killed},
    {"segfault", segfault}, {"clocks", clocks},     {"nested", nested},     {"many", many},              {"wait", wait_any},
    {"threads", threads},  {"thread", from_thread},   {"concurrent", concurrent}, {"placed", placed},
};

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (argc < 2 || strcmp(argv[1], cases[i].name) == 0)
            cases[i].run();
    return 0;
}
