/* The forwarding channel (issue 11): forwarded calls that block on the host must not stop the
 * program's other threads or its end.
 *   compute  - one thread blocks in read() on an empty pipe while others compute and make
 *              forwarded calls (fstat, writes to /dev/null and a file); then the pipe is fed and
 *              the reader finishes. With one vCPU this only works if the blocked call does not
 *              hold the CPU.
 *   forever  - a thread blocks in read() on a pipe nobody writes; main exits with 7.
 *   readers  - 1500 threads block in read() on one empty pipe at once (more than the 1024
 *              calls the channel holds in flight), then main writes one byte for each.
 *   pipes    - the same with a pipe per reader, fed one byte at a time from the last reader
 *              started to the first: the readers that found no room in the channel (and
 *              main's writes) need the slots of blocked readers that get their bytes last.
 *   many     - 300 threads each make forwarded calls at once (more than the channel's slots),
 *              writing numbered lines through one pipe to a reader, which checks them.
 *   order    - one thread writes 20000 numbered records into a pipe; another reads and checks
 *              that they arrive whole and in order.
 *   eintr    - SIGALRM (a handler without SA_RESTART) interrupts a read() blocked on an idle
 *              pipe: -1 EINTR. restart: with SA_RESTART the read goes on, and gets the byte
 *              the handler writes into the pipe. tkill: another thread's pthread_kill does it.
 *              The signal is sent once /proc shows main asleep (looked at for at most 10 s): a
 *              signal before the read would make it read the handler's byte.
 *   file8    - 8 threads append 2000 numbered 64-byte records each to one file (O_APPEND);
 *              the file is read back: every record present once, whole (each record's
 *              contents checked).
 * Prints the same lines natively. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include "proc_state.h"

static int pipefd[2];
static volatile int reader_done;
static long long sizes[2];

static void *reader(void *arg) {
    (void)arg;
    char buf[64];
    ssize_t n = read(pipefd[0], buf, sizeof buf - 1);
    if (n < 0) { perror("read"); exit(1); }
    buf[n] = 0;
    printf("reader got %zd bytes: %s\n", n, buf);
    reader_done = 1;
    return 0;
}

static void *compute(void *arg) {
    long id = (long)arg;
    char name[64];
    snprintf(name, sizeof name, "/tmp/hrt-chan-%d-%ld", getpid(), id);
    int f = open(name, O_CREAT | O_TRUNC | O_RDWR, 0600);
    int null = open("/dev/null", O_WRONLY);
    if (f < 0 || null < 0) { perror("open"); exit(1); }
    double x = 0;
    for (int i = 0; i < 2000; i++) {
        for (int j = 0; j < 2000; j++) x += (i ^ j) * 1e-9;
        struct stat st;
        if (fstat(f, &st) != 0 || write(null, "z", 1) != 1 || write(f, "ab", 2) != 2) { perror("io"); exit(1); }
    }
    struct stat st;
    fstat(f, &st);
    close(f);
    close(null);
    unlink(name);
    sizes[id] = x > 0 ? (long long)st.st_size : -1;
    return 0;
}

static int run_compute(void) {
    if (pipe(pipefd)) return 1;
    pthread_t r, c[2];
    pthread_create(&r, 0, reader, 0);
    usleep(20000); /* the reader is in its read() by now (not needed for correctness) */
    for (long i = 0; i < 2; i++) pthread_create(&c[i], 0, compute, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(c[i], 0);
    for (int i = 0; i < 2; i++) printf("compute %d: %lld bytes\n", i, sizes[i]);
    printf("computing done, reader done: %d\n", reader_done);
    fflush(stdout);
    if (write(pipefd[1], "wake up", 7) != 7) return 1;
    pthread_join(r, 0);
    return 0;
}

static void *forever(void *arg) {
    (void)arg;
    char c;
    read(pipefd[0], &c, 1);
    printf("the forever reader returned\n");
    return 0;
}

static int run_forever(void) {
    if (pipe(pipefd)) return 1;
    pthread_t t;
    pthread_create(&t, 0, forever, 0);
    usleep(20000);
    printf("main exits while a thread is blocked in read\n");
    fflush(stdout);
    exit(7);
}

#define MANY 300
#define LINES 20
static void *many_writer(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < LINES; i++) {
        char line[32];
        int n = snprintf(line, sizeof line, "%03ld %02d\n", id, i);
        if (write(pipefd[1], line, n) != n) { perror("write"); exit(1); }
    }
    return 0;
}

static int run_many(void) {
    if (pipe(pipefd)) return 1;
    static pthread_t t[MANY];
    static int seen[MANY];
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 << 10);
    for (long i = 0; i < MANY; i++)
        if (pthread_create(&t[i], &a, many_writer, (void *)i)) { printf("create failed at %ld\n", i); return 1; }
    /* Each line is 7 bytes, written atomically (< PIPE_BUF): read them back. */
    long total = 0, bad = 0;
    char buf[7];
    while (total < MANY * LINES) {
        size_t got = 0;
        while (got < sizeof buf) {
            ssize_t n = read(pipefd[0], buf + got, sizeof buf - got);
            if (n <= 0) { perror("read"); return 1; }
            got += n;
        }
        int id, i;
        if (sscanf(buf, "%3d %2d", &id, &i) != 2 || id < 0 || id >= MANY || i != seen[id]) bad++;
        else seen[id]++;
        total++;
    }
    for (int i = 0; i < MANY; i++) pthread_join(t[i], 0);
    printf("many: %ld lines, %ld out of order or torn\n", total, bad);
    return 0;
}

#define READERS 1500
static volatile int readers_started;
static void *one_byte_reader(void *arg) {
    (void)arg;
    __atomic_add_fetch(&readers_started, 1, __ATOMIC_SEQ_CST);
    char c;
    return (void *)(long)(read(pipefd[0], &c, 1) == 1 && c == 'r');
}

/* Joins the readers; how many of them got their byte. */
static long joined_ok(pthread_t *t) {
    long got = 0;
    for (int i = 0; i < READERS; i++) {
        void *r;
        pthread_join(t[i], &r);
        got += (long)r;
    }
    return got;
}

static int own_pipe[READERS][2];
static void *own_pipe_reader(void *arg) {
    long i = (long)arg;
    __atomic_add_fetch(&readers_started, 1, __ATOMIC_SEQ_CST);
    char c;
    return (void *)(long)(read(own_pipe[i][0], &c, 1) == 1 && c == (char)('a' + i % 26));
}

static int run_pipes(void) {
    static pthread_t t[READERS];
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 << 10);
    for (long i = 0; i < READERS; i++) {
        if (pipe(own_pipe[i])) { perror("pipe"); return 1; }
        if (pthread_create(&t[i], &a, own_pipe_reader, (void *)i)) { printf("create failed at %ld\n", i); return 1; }
    }
    while (__atomic_load_n(&readers_started, __ATOMIC_SEQ_CST) < READERS) usleep(1000);
    usleep(100000);
    for (long i = READERS - 1; i >= 0; i--) {
        char c = (char)('a' + i % 26);
        if (write(own_pipe[i][1], &c, 1) != 1) { perror("write"); return 1; }
    }
    long got = joined_ok(t);
    printf("pipes: %ld of %d got their byte\n", got, READERS);
    return 0;
}

static int run_readers(void) {
    if (pipe(pipefd)) return 1;
    static pthread_t t[READERS];
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 << 10);
    for (long i = 0; i < READERS; i++)
        if (pthread_create(&t[i], &a, one_byte_reader, 0)) { printf("create failed at %ld\n", i); return 1; }
    while (__atomic_load_n(&readers_started, __ATOMIC_SEQ_CST) < READERS) usleep(1000);
    usleep(100000); /* most of them are in read() by now */
    static char bytes[READERS];
    memset(bytes, 'r', sizeof bytes);
    if (write(pipefd[1], bytes, sizeof bytes) != (ssize_t)sizeof bytes) { perror("write"); return 1; }
    long got = joined_ok(t);
    printf("readers: %ld of %d got their byte\n", got, READERS);
    return 0;
}

static void *order_writer(void *arg) {
    (void)arg;
    for (int i = 0; i < 20000; i++)
        if (write(pipefd[1], &i, sizeof i) != sizeof i) { perror("write"); exit(1); }
    close(pipefd[1]);
    return 0;
}

static int run_order(void) {
    if (pipe(pipefd)) return 1;
    pthread_t t;
    pthread_create(&t, 0, order_writer, 0);
    int expect = 0, v, bad = 0;
    ssize_t n;
    while ((n = read(pipefd[0], &v, sizeof v)) == sizeof v) {
        if (v != expect) bad++;
        expect++;
    }
    pthread_join(t, 0);
    printf("order: %d records, %d out of order, last read %zd\n", expect, bad, n);
    return 0;
}

#define FILE_THREADS 8
#define FILE_RECORDS 2000
static int append_fd;
static void *appender(void *arg) {
    long id = (long)arg;
    for (int i = 0; i < FILE_RECORDS; i++) {
        char rec[64];
        memset(rec, 'a' + (int)id, sizeof rec);
        snprintf(rec, 16, "%ld %d", id, i);
        rec[63] = '\n';
        if (write(append_fd, rec, sizeof rec) != sizeof rec) { perror("append"); exit(1); }
    }
    return 0;
}

static int run_file8(void) {
    char name[64];
    snprintf(name, sizeof name, "/tmp/hrt-chan-file8-%d", getpid());
    append_fd = open(name, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0600);
    if (append_fd < 0) { perror("open"); return 1; }
    pthread_t t[FILE_THREADS];
    for (long i = 0; i < FILE_THREADS; i++) pthread_create(&t[i], 0, appender, (void *)i);
    for (int i = 0; i < FILE_THREADS; i++) pthread_join(t[i], 0);
    close(append_fd);
    int fd = open(name, O_RDONLY);
    static int seen[FILE_THREADS][FILE_RECORDS];
    long records = 0, bad = 0;
    char rec[64];
    while (read(fd, rec, sizeof rec) == sizeof rec) {
        long id;
        int i;
        records++;
        if (sscanf(rec, "%ld %d", &id, &i) != 2 || id < 0 || id >= FILE_THREADS || i < 0 || i >= FILE_RECORDS ||
            rec[62] != 'a' + id || rec[63] != '\n' || seen[id][i]++) bad++;
    }
    close(fd);
    unlink(name);
    printf("file8: %ld records, %ld bad or repeated, all present %d\n", records, bad,
           records == FILE_THREADS * FILE_RECORDS && bad == 0);
    return 0;
}

static volatile sig_atomic_t handled;
static void on_alarm(int sig) {
    (void)sig;
    handled++;
    if (write(pipefd[1], "x", 1) != 1) _exit(3);
}

static int interrupted_read(int flags, int by_thread);

/* Once main sleeps (in its read), sends it SIGALRM: by pthread_kill to `arg`, or (arg NULL) by
 * a 1 ms ITIMER_REAL, SIGALRM blocked here so that main gets it. */
static void *signal_main(void *arg) {
    sigset_t alrm;
    sigemptyset(&alrm);
    sigaddset(&alrm, SIGALRM);
    pthread_sigmask(SIG_BLOCK, &alrm, 0);
    char stat[64];
    snprintf(stat, sizeof stat, "/proc/self/task/%d/stat", (int)getpid());
    for (int i = 0; i < 1000 && !sleeps(stat); i++) usleep(10000);
    if (arg) {
        pthread_kill(*(pthread_t *)arg, SIGALRM);
    } else {
        struct itimerval it = {{0, 0}, {0, 1000}};
        setitimer(ITIMER_REAL, &it, 0);
    }
    return 0;
}

static int interrupted_read(int flags, int by_thread) {
    if (pipe(pipefd)) return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = flags;
    sigaction(SIGALRM, &sa, 0);
    pthread_t self = pthread_self(), t;
    pthread_create(&t, 0, signal_main, by_thread ? &self : 0);
    char buf[8];
    ssize_t n = read(pipefd[0], buf, sizeof buf);
    int e = errno;
    pthread_join(t, 0);
    printf("read: %zd %s, handler ran %d time(s)\n", n, n < 0 ? (e == EINTR ? "EINTR" : strerror(e)) : "bytes",
           (int)handled);
    return 0;
}

static int run_forks(void) {
    int served = 0;
    for (int i = 0; i < 60; i++) {
        int down[2], up[2];
        if (pipe(down) || pipe(up)) return 1;
        pid_t pid = fork();
        if (pid == 0) {
            char c;
            if (read(down[0], &c, 1) != 1) _exit(3);
            c++;
            _exit(write(up[1], &c, 1) == 1 ? 0 : 4);
        }
        char c = (char)('a' + i % 20), back = 0;
        usleep(3000); // the child is (most likely) blocked in its read by now
        write(down[1], &c, 1);
        read(up[0], &back, 1);
        int status;
        waitpid(pid, &status, 0);
        if (back == c + 1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) served++;
        close(down[0]), close(down[1]), close(up[0]), close(up[1]);
    }
    printf("forks: %d of 60 children served\n", served);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, 0, _IOLBF, 0);
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "compute")) return run_compute();
    if (!strcmp(mode, "forever")) return run_forever();
    if (!strcmp(mode, "many")) return run_many();
    if (!strcmp(mode, "readers")) return run_readers();
    if (!strcmp(mode, "pipes")) return run_pipes();
    if (!strcmp(mode, "order")) return run_order();
    if (!strcmp(mode, "file8")) return run_file8();
    if (!strcmp(mode, "eintr")) return interrupted_read(0, 0);
    if (!strcmp(mode, "restart")) return interrupted_read(SA_RESTART, 0);
    if (!strcmp(mode, "tkill")) return interrupted_read(0, 1);
    if (!strcmp(mode, "forks")) return run_forks();
    fprintf(stderr, "usage: %s compute|forever|readers|pipes|many|order|file8|eintr|restart|tkill|forks\n", argv[0]);
    return 2;
}
