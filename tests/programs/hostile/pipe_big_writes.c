/* Writes of more than PIPE_BUF bytes to pipes, as on Linux:
 * - a blocking write gives all its bytes, in order, to a reader slower than the writer;
 * - a non-blocking one takes what fits, then EAGAIN, then what a read made room for;
 * - a signal ends a blocking one after its first part, with that part's count;
 * - a reader that goes away ends one with a part, and the next write fails with EPIPE;
 * - readv and small writevs (musl's stdio) on full, empty and busy pipes;
 * - writevs of more than PIPE_BUF bytes in all give all their bytes, in order, to a slow reader.
 * (HRT writes the part that fits at once and waits for room only for the rest.) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long mix(unsigned long sum, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        sum = sum * 31 + p[i];
    return sum;
}

static void on_alarm(int sig) { (void)sig; }

/* Forks a reader of pipe `p` (closing its read end here) that reads `chunk` bytes at a time,
 * pausing `pause` us after every `every` reads, and prints what it got as `who`. */
static pid_t slow_reader_of(int p[2], size_t chunk, int every, int pause, const char *who) {
    pid_t c = fork();
    if (c == 0) {
        close(p[1]);
        unsigned char buf[8192];
        unsigned long sum = 0, n = 0;
        ssize_t r;
        int k = 0;
        while ((r = read(p[0], buf, chunk)) > 0) {
            sum = mix(sum, buf, r);
            n += r;
            if (++k % every == 0)
                usleep(pause);
        }
        printf("%s: %lu bytes, sum %lx\n", who, n, sum);
        _exit(0);
    }
    close(p[0]);
    return c;
}

static void slow_reader(void) {
    int p[2];
    if (pipe(p))
        return perror("pipe");
    pid_t c = slow_reader_of(p, 3000, 64, 500, "reader");
    static unsigned char big[1 << 20];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (unsigned char)(i * 7 + i / 4096);
    const size_t sizes[] = {4097, 8192, 65536, 100000, 1 << 20, 12345};
    unsigned long sum = 0, total = 0;
    int short_writes = 0;
    for (int i = 0; i < 60; i++) {
        size_t len = sizes[i % 6], off = (i * 4099) % 1000;
        if (len + off > sizeof big)
            off = 0;
        ssize_t w = write(p[1], big + off, len);
        if (w != (ssize_t)len) {
            short_writes++;
            printf("write %d: %zd of %zu (%s)\n", i, w, len, strerror(errno));
        }
        if (w > 0) {
            sum = mix(sum, big + off, w);
            total += w;
        }
    }
    close(p[1]);
    waitpid(c, NULL, 0);
    printf("writer: %lu bytes, sum %lx, %d short\n", total, sum, short_writes);
}

static void non_blocking(void) {
    int p[2];
    if (pipe2(p, O_NONBLOCK))
        return perror("pipe2");
    static char buf[100000];
    ssize_t a = write(p[1], buf, sizeof buf);
    ssize_t b = write(p[1], buf, sizeof buf);
    int eb = errno;
    ssize_t r = read(p[0], buf, 5000);
    ssize_t c = write(p[1], buf, sizeof buf);
    printf("non-blocking: %zd, then %zd (%s), read %zd, then %zd\n", a, b, b < 0 ? strerror(eb) : "-", r, c);
    close(p[0]);
    close(p[1]);
}

static void signal_ends_it(void) {
    int p[2];
    if (pipe(p))
        return perror("pipe");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART */
    sigaction(SIGALRM, &sa, NULL);
    /* Every 50 ms, until the write has ended: a loaded host may run the write after the first. */
    struct itimerval t = {{0, 50000}, {0, 50000}}, off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &t, NULL);
    static char buf[200000];
    ssize_t w = write(p[1], buf, sizeof buf);
    setitimer(ITIMER_REAL, &off, NULL);
    printf("interrupted after its first part: %zd\n", w);
    close(p[0]);
    close(p[1]);
}

static void reader_goes_away(void) {
    signal(SIGPIPE, SIG_IGN);
    int p[2];
    if (pipe(p))
        return perror("pipe");
    pid_t c = fork();
    if (c == 0) {
        close(p[1]);
        char buf[10000];
        usleep(20000);
        ssize_t got = 0, r;
        while (got < 10000 && (r = read(p[0], buf, 10000 - got)) > 0)
            got += r;
        _exit(0);
    }
    close(p[0]);
    static char buf[300000];
    ssize_t w = write(p[1], buf, sizeof buf);
    ssize_t again = write(p[1], buf, 5000);
    int e = errno;
    waitpid(c, NULL, 0);
    printf("reader gone: a part written %s, then %s\n", w > 0 && w < (ssize_t)sizeof buf ? "yes" : "no",
           again < 0 ? strerror(e) : "written");
    close(p[1]);
}

static void vectored(void) {
    int p[2];
    if (pipe2(p, O_NONBLOCK))
        return perror("pipe2");
    static char fill[65536], a[1000], b[3000], r[100];
    memset(a, 'a', sizeof a);
    memset(b, 'b', sizeof b);
    struct iovec w[2] = {{a, sizeof a}, {b, sizeof b}};
    struct iovec rv[2] = {{r, 50}, {r + 50, 50}};
    ssize_t full = write(p[1], fill, sizeof fill);
    ssize_t x = writev(p[1], w, 2);
    int ex = errno;
    ssize_t y = readv(p[0], rv, 2);
    while (read(p[0], fill, sizeof fill) > 0)
        ;
    ssize_t z = readv(p[0], rv, 2);
    int ez = errno;
    ssize_t q = writev(p[1], w, 2);
    ssize_t s = readv(p[0], rv, 2);
    printf("vectored: full %zd, writev %zd (%s), readv %zd, empty readv %zd (%s), writev %zd, readv %zd '%c%c'\n", full, x,
           x < 0 ? strerror(ex) : "-", y, z, z < 0 ? strerror(ez) : "-", q, s, r[0], r[99]);
    close(p[0]);
    close(p[1]);

    /* Blocking, busy: a reader using readv, slower than the writer's small writevs. */
    if (pipe(p))
        return perror("pipe");
    pid_t c = fork();
    if (c == 0) {
        close(p[1]);
        unsigned char one[700], two[900];
        struct iovec in[2] = {{one, sizeof one}, {two, sizeof two}};
        unsigned long sum = 0, n = 0;
        ssize_t got;
        int k = 0;
        while ((got = readv(p[0], in, 2)) > 0) {
            sum = mix(sum, one, got < (ssize_t)sizeof one ? got : sizeof one);
            if (got > (ssize_t)sizeof one)
                sum = mix(sum, two, got - sizeof one);
            n += got;
            if (++k % 64 == 0)
                usleep(500);
        }
        printf("readv reader: %lu bytes, sum %lx\n", n, sum);
        _exit(0);
    }
    close(p[0]);
    unsigned char head[17], body[1500];
    unsigned long sum = 0, total = 0;
    for (int i = 0; i < 3000; i++) {
        memset(head, i & 0xff, sizeof head);
        memset(body, (i * 3) & 0xff, sizeof body);
        struct iovec out[2] = {{head, sizeof head}, {body, 1 + i % (sizeof body)}};
        ssize_t n = writev(p[1], out, 2);
        if (n != (ssize_t)(out[0].iov_len + out[1].iov_len))
            printf("writev %d: %zd\n", i, n);
        sum = mix(sum, head, sizeof head);
        sum = mix(sum, body, out[1].iov_len);
        total += out[0].iov_len + out[1].iov_len;
    }
    close(p[1]);
    waitpid(c, NULL, 0);
    printf("writev writer: %lu bytes, sum %lx\n", total, sum);
}

static void big_writevs(void) {
    int p[2];
    if (pipe(p))
        return perror("pipe");
    pid_t c = slow_reader_of(p, 5000, 16, 300, "big writev reader");
    static unsigned char a[70000], b[30000], z[1];
    for (size_t i = 0; i < sizeof a; i++)
        a[i] = (unsigned char)(i * 13 + i / 777);
    for (size_t i = 0; i < sizeof b; i++)
        b[i] = (unsigned char)(i * 5 + 1);
    unsigned long sum = 0, total = 0;
    int short_writes = 0;
    for (int i = 0; i < 200; i++) {
        size_t la = 1000 + (i * 7919) % (sizeof a - 1000), lb = (i * 104729) % sizeof b;
        struct iovec v[4] = {{a, la}, {z, 0}, {b, lb}, {a + 17, 4097}};
        size_t want = la + lb + 4097;
        ssize_t w = writev(p[1], v, 4);
        if (w != (ssize_t)want) {
            short_writes++;
            printf("writev %d: %zd of %zu\n", i, w, want);
        }
        sum = mix(sum, a, la);
        sum = mix(sum, b, lb);
        sum = mix(sum, a + 17, 4097);
        total += want;
    }
    close(p[1]);
    waitpid(c, NULL, 0);
    printf("big writev writer: %lu bytes, sum %lx, %d short\n", total, sum, short_writes);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    slow_reader();
    non_blocking();
    signal_ends_it();
    reader_goes_away();
    vectored();
    big_writevs();
    printf("pipe big writes: done\n");
    return 0;
}
