/* Linux native AIO through the raw system calls (as libaio makes them): io_setup's checks,
 * writes, reads and vectored reads at offsets in one io_submit, fsync and fdatasync, a pipe
 * read with RWF_NOWAIT (an EAGAIN event) and with data, completions counted by an eventfd,
 * io_submit's own errors (bad context, count, pointers, descriptors, access modes, reserved
 * fields, unknown commands) and a partial submission, a context filled until EAGAIN and then
 * reaped, io_getevents' timeout and argument checks, io_pgetevents, io_cancel, io_destroy, and
 * a forked child that does not have its parent's context; O_DIRECT requests (`direct_io`). One
 * line per case, the same natively
 * and under hrt.
 * Usage: calls_aio */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long io_setup(unsigned n, aio_context_t *ctx) { return syscall(SYS_io_setup, n, ctx); }
static long io_destroy(aio_context_t ctx) { return syscall(SYS_io_destroy, ctx); }
static long io_submit(aio_context_t ctx, long n, struct iocb **cbs) { return syscall(SYS_io_submit, ctx, n, cbs); }
static long io_getevents(aio_context_t ctx, long min, long n, struct io_event *ev, struct timespec *t) {
    return syscall(SYS_io_getevents, ctx, min, n, ev, t);
}

/* "ok N" or the errno's name-ish number. */
static const char *res(long r) {
    static char buf[8][32];
    static int i;
    char *b = buf[i++ % 8];
    if (r < 0)
        snprintf(b, 32, "errno %d", errno);
    else
        snprintf(b, 32, "ok %ld", r);
    return b;
}

static void prep(struct iocb *cb, int op, int fd, void *buf, size_t n, long long off) {
    memset(cb, 0, sizeof *cb);
    cb->aio_lio_opcode = op;
    cb->aio_fildes = fd;
    cb->aio_buf = (uint64_t)(uintptr_t)buf;
    cb->aio_nbytes = n;
    cb->aio_offset = off;
}

static int by_data(const void *a, const void *b) {
    const struct io_event *x = a, *y = b;
    return (x->data > y->data) - (x->data < y->data);
}

/* Reaps exactly `n` events (waiting up to a second) and prints them by their data. */
static void reap(const char *what, aio_context_t ctx, int n, struct iocb **cbs) {
    struct io_event ev[16];
    struct timespec t = {1, 0};
    long got = io_getevents(ctx, n, 16, ev, &t);
    printf("%s: io_getevents %s:", what, res(got));
    if (got > 0) {
        qsort(ev, got, sizeof ev[0], by_data);
        for (long i = 0; i < got; i++) {
            int which = -1;
            for (int k = 0; k < n; k++)
                if (ev[i].obj == (uint64_t)(uintptr_t)cbs[k])
                    which = k;
            printf(" [data %llu iocb %d res %lld res2 %lld]", (unsigned long long)ev[i].data, which,
                   (long long)ev[i].res, (long long)ev[i].res2);
        }
    }
    printf("\n");
}

static void setup_checks(void) {
    aio_context_t ctx = 0;
    printf("io_setup NULL ctxp: %s\n", res(io_setup(1, NULL)));
    ctx = 1;
    printf("io_setup ctx not zero: %s\n", res(io_setup(1, &ctx)));
    ctx = 0;
    printf("io_setup nr -1: %s\n", res(io_setup(-1, &ctx)));
    printf("io_setup nr 0: %s\n", res(io_setup(0, &ctx)));
    unsigned max = 65536;
    FILE *f = fopen("/proc/sys/fs/aio-max-nr", "r");
    if (f) {
        if (fscanf(f, "%u", &max) != 1)
            max = 65536;
        fclose(f);
    }
    printf("io_setup above aio-max-nr: %s\n", res(io_setup(max + 1, &ctx)));
    ctx = 0;
    long r = io_setup(8, &ctx);
    printf("io_setup 8: %s, context set: %d\n", res(r), ctx != 0);
    const char *first = res(io_destroy(ctx));
    printf("io_destroy: %s, again: %s\n", first, res(io_destroy(ctx)));
    printf("io_destroy 0: %s\n", res(io_destroy(0)));
}

static void file_io(void) {
    char path[] = "/tmp/hrt-aio-XXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    aio_context_t ctx = 0;
    io_setup(16, &ctx);
    static char a[100], b[200], c[50];
    memset(a, 'a', sizeof a), memset(b, 'b', sizeof b), memset(c, 'c', sizeof c);
    struct iocb w[3], *wp[3] = {&w[0], &w[1], &w[2]};
    prep(&w[0], IOCB_CMD_PWRITE, fd, a, sizeof a, 0);
    prep(&w[1], IOCB_CMD_PWRITE, fd, b, sizeof b, 4096);
    prep(&w[2], IOCB_CMD_PWRITE, fd, c, sizeof c, 150);
    for (int i = 0; i < 3; i++)
        w[i].aio_data = 10 + i;
    printf("three writes: io_submit %s\n", res(io_submit(ctx, 3, wp)));
    reap("three writes", ctx, 3, wp);
    printf("file size %ld, position %ld\n", (long)lseek(fd, 0, SEEK_END), (long)lseek(fd, 0, SEEK_CUR));
    lseek(fd, 0, SEEK_SET);

    static char r1[300], r2[64], r3[64];
    struct iovec iov[2] = {{r2, 20}, {r3, 30}};
    struct iocb rd[4], *rp[4] = {&rd[0], &rd[1], &rd[2], &rd[3]};
    prep(&rd[0], IOCB_CMD_PREAD, fd, r1, sizeof r1, 4000);
    prep(&rd[1], IOCB_CMD_PREADV, fd, iov, 2, 140);
    prep(&rd[2], IOCB_CMD_FSYNC, fd, NULL, 0, 0);
    prep(&rd[3], IOCB_CMD_FDSYNC, fd, NULL, 0, 0);
    for (int i = 0; i < 4; i++)
        rd[i].aio_data = 20 + i;
    printf("reads and syncs: io_submit %s\n", res(io_submit(ctx, 4, rp)));
    reap("reads and syncs", ctx, 4, rp);
    for (int i = 0; i < 64; i++) {
        r2[i] = r2[i] ? r2[i] : '.';
        r3[i] = r3[i] ? r3[i] : '.';
    }
    printf("pread at 4000: %.3s (zeros before b: %d); preadv at 140: %.20s|%.30s\n", r1 + 96,
           r1[0] == 0 && r1[95] == 0, r2, r3);
    printf("position still %ld\n", (long)lseek(fd, 0, SEEK_CUR));

    /* A write with RWF_DSYNC in aio_rw_flags. */
    struct iocb ds, *dsp = &ds;
    prep(&ds, IOCB_CMD_PWRITE, fd, "dsync", 5, 5000);
    ds.aio_rw_flags = RWF_DSYNC;
    ds.aio_data = 50;
    printf("write with RWF_DSYNC: io_submit %s\n", res(io_submit(ctx, 1, &dsp)));
    reap("dsync write", ctx, 1, &dsp);
    printf("file size %ld\n", (long)lseek(fd, 0, SEEK_END));
    io_destroy(ctx);
    close(fd);
}

static void pipe_io(void) {
    int p[2];
    if (pipe(p))
        return;
    aio_context_t ctx = 0;
    io_setup(4, &ctx);
    static char buf[64];
    struct iocb cb, *cp = &cb;
    prep(&cb, IOCB_CMD_PREAD, p[0], buf, sizeof buf, 0);
    cb.aio_rw_flags = RWF_NOWAIT;
    cb.aio_data = 7;
    printf("empty pipe, RWF_NOWAIT: io_submit %s\n", res(io_submit(ctx, 1, &cp)));
    reap("empty pipe", ctx, 1, &cp);
    if (write(p[1], "hello pipe", 10) != 10)
        return;
    cb.aio_rw_flags = 0;
    cb.aio_offset = 12345; /* a pipe has no offsets: ignored */
    printf("pipe with data: io_submit %s\n", res(io_submit(ctx, 1, &cp)));
    reap("pipe with data", ctx, 1, &cp);
    printf("read: %.10s\n", buf);
    struct iocb wcb, *wp = &wcb;
    prep(&wcb, IOCB_CMD_PWRITE, p[1], "to the pipe", 11, 99);
    wcb.aio_data = 8;
    printf("pipe write: io_submit %s\n", res(io_submit(ctx, 1, &wp)));
    reap("pipe write", ctx, 1, &wp);
    char back[16] = {0};
    printf("read back %s: %.11s\n", res(read(p[0], back, sizeof back)), back);

    /* Completions counted by an eventfd. */
    int efd = eventfd(0, 0);
    struct iocb e[2], *ep[2] = {&e[0], &e[1]};
    for (int i = 0; i < 2; i++) {
        prep(&e[i], IOCB_CMD_PWRITE, p[1], "x", 1, 0);
        e[i].aio_flags = IOCB_FLAG_RESFD;
        e[i].aio_resfd = efd;
        e[i].aio_data = 30 + i;
    }
    printf("two writes with IOCB_FLAG_RESFD: io_submit %s\n", res(io_submit(ctx, 2, ep)));
    uint64_t count = 0;
    const char *got = res(read(efd, &count, 8));
    printf("eventfd read %s, count %llu\n", got, (unsigned long long)count);
    reap("with eventfd", ctx, 2, ep);
    e[0].aio_resfd = p[0];
    printf("IOCB_FLAG_RESFD on a pipe: io_submit %s\n", res(io_submit(ctx, 1, ep)));
    e[0].aio_resfd = 999;
    printf("IOCB_FLAG_RESFD on a closed descriptor: io_submit %s\n", res(io_submit(ctx, 1, ep)));
    close(efd);

    /* A completion to a blocking eventfd whose count is full: Linux's completion never waits
     * (it leaves the count at its maximum, one past what a write can reach, which hrt does
     * not: only the bound is printed). Under hrt io_submit waited for good. */
    efd = eventfd(0, 0);
    uint64_t full = UINT64_MAX - 1;
    printf("eventfd filled: %s\n", res(write(efd, &full, 8)));
    e[0].aio_resfd = efd;
    e[0].aio_data = 40;
    printf("a write with IOCB_FLAG_RESFD to a full count: io_submit %s\n", res(io_submit(ctx, 1, ep)));
    reap("to a full count", ctx, 1, ep);
    count = 0;
    got = res(read(efd, &count, 8));
    printf("eventfd read %s, count at least its maximum less one: %s\n", got, count >= UINT64_MAX - 1 ? "yes" : "no");
    close(efd);

    /* Poll of a ready descriptor. */
    struct iocb pc, *pp = &pc;
    prep(&pc, IOCB_CMD_POLL, p[0], NULL, 0, 0);
    pc.aio_buf = POLLIN;
    pc.aio_data = 40;
    printf("poll of a readable pipe: io_submit %s\n", res(io_submit(ctx, 1, &pp)));
    reap("poll", ctx, 1, &pp);
    io_destroy(ctx);
    close(p[0]), close(p[1]);
}

static void submit_errors(void) {
    aio_context_t ctx = 0, bad = 12345;
    io_setup(4, &ctx);
    int ro = open("/proc/self/exe", O_RDONLY);
    char path[] = "/tmp/hrt-aio-wo-XXXXXX";
    int wo = mkstemp(path);
    unlink(path);
    close(wo);
    static char buf[16];
    struct iocb cb, *cp = &cb, *null_cb = NULL;
    prep(&cb, IOCB_CMD_PREAD, ro, buf, sizeof buf, 0);
    printf("bad context: %s\n", res(io_submit(bad, 1, &cp)));
    printf("nr -1: %s\n", res(io_submit(ctx, -1, &cp)));
    printf("nr 0: %s\n", res(io_submit(ctx, 0, &cp)));
    printf("iocbpp -1: %s\n", res(io_submit(ctx, 1, (struct iocb **)-1)));
    printf("NULL iocb: %s\n", res(io_submit(ctx, 1, &null_cb)));
    prep(&cb, IOCB_CMD_PREAD, -1, buf, sizeof buf, 0);
    printf("fd -1: %s\n", res(io_submit(ctx, 1, &cp)));
    prep(&cb, IOCB_CMD_PWRITE, ro, buf, sizeof buf, 0);
    printf("write to a read-only descriptor: %s\n", res(io_submit(ctx, 1, &cp)));
    int wfd = open("/dev/null", O_WRONLY);
    prep(&cb, IOCB_CMD_PREAD, wfd, buf, sizeof buf, 0);
    printf("read from a write-only descriptor: %s\n", res(io_submit(ctx, 1, &cp)));
    prep(&cb, IOCB_CMD_PREAD, ro, (void *)16, sizeof buf, 0);
    cb.aio_data = 60;
    printf("buffer at 16: %s\n", res(io_submit(ctx, 1, &cp)));
    reap("buffer at 16", ctx, 1, &cp);
    struct iovec badv[2] = {{buf, 4}, {(void *)16, 4}};
    prep(&cb, IOCB_CMD_PREADV, ro, badv, 2, 0);
    cb.aio_data = 61;
    printf("iovec with a buffer at 16: %s\n", res(io_submit(ctx, 1, &cp)));
    reap("iovec with a buffer at 16", ctx, 1, &cp);
    prep(&cb, IOCB_CMD_PREADV, ro, (void *)16, 2, 0);
    printf("iovec array at 16: %s\n", res(io_submit(ctx, 1, &cp)));
    prep(&cb, IOCB_CMD_PREADV, ro, badv, 5000, 0);
    printf("5000 iovecs: %s\n", res(io_submit(ctx, 1, &cp)));
    prep(&cb, IOCB_CMD_PREAD, ro, buf, sizeof buf, 0);
    cb.aio_reserved2 = 1;
    printf("reserved2 set: %s\n", res(io_submit(ctx, 1, &cp)));
    prep(&cb, IOCB_CMD_NOOP, ro, buf, sizeof buf, 0);
    printf("IOCB_CMD_NOOP: %s\n", res(io_submit(ctx, 1, &cp)));
    prep(&cb, 99, ro, buf, sizeof buf, 0);
    printf("command 99: %s\n", res(io_submit(ctx, 1, &cp)));
    prep(&cb, IOCB_CMD_FSYNC, ro, buf, 0, 0);
    printf("fsync with a buffer: %s\n", res(io_submit(ctx, 1, &cp)));
    prep(&cb, IOCB_CMD_PREAD, ro, buf, sizeof buf, 0);
    cb.aio_rw_flags = 0x40000000;
    printf("unknown rw flag: %s\n", res(io_submit(ctx, 1, &cp)));
    prep(&cb, IOCB_CMD_PREAD, ro, buf, sizeof buf, 0);
    cb.aio_flags = 0x80;
    cb.aio_data = 62;
    printf("unknown iocb flag: %s\n", res(io_submit(ctx, 1, &cp)));
    reap("unknown iocb flag", ctx, 1, &cp);

    /* The first request is submitted, the second fails: 1. */
    struct iocb two[2], *tp[2] = {&two[0], &two[1]};
    prep(&two[0], IOCB_CMD_PREAD, ro, buf, 4, 0);
    prep(&two[1], IOCB_CMD_PREAD, -1, buf, 4, 0);
    printf("good then bad: %s\n", res(io_submit(ctx, 2, tp)));
    reap("good then bad", ctx, 1, tp);
    printf("ELF magic read: %d\n", memcmp(buf, "\177ELF", 4) == 0);

    /* io_getevents' checks. */
    struct io_event ev[4];
    struct timespec zero = {0, 0}, ms = {0, 1000000}, badts = {0, 2000000000};
    printf("io_getevents none ready, timeout 0: %s\n", res(io_getevents(ctx, 1, 4, ev, &zero)));
    printf("io_getevents none ready, timeout 1 ms: %s\n", res(io_getevents(ctx, 1, 4, ev, &ms)));
    printf("io_getevents min 0: %s\n", res(io_getevents(ctx, 0, 4, ev, NULL)));
    printf("io_getevents min > nr: %s\n", res(io_getevents(ctx, 2, 1, ev, &zero)));
    printf("io_getevents min -1: %s\n", res(io_getevents(ctx, -1, 1, ev, &zero)));
    printf("io_getevents bad context: %s\n", res(io_getevents(bad, 0, 1, ev, &zero)));
    printf("io_getevents timeout 0 s 2e9 ns: %s\n", res(io_getevents(ctx, 0, 1, ev, &badts)));
    sigset_t all;
    sigfillset(&all);
    struct {
        sigset_t *set;
        size_t size;
    } usig = {&all, 8}, usig_bad = {&all, 4};
    printf("io_pgetevents with a mask, timeout 0: %s\n",
           res(syscall(SYS_io_pgetevents, ctx, 1, 4, ev, &zero, &usig)));
    printf("io_pgetevents with a wrong size: %s\n", res(syscall(SYS_io_pgetevents, ctx, 1, 4, ev, &zero, &usig_bad)));
    printf("io_cancel NULL iocb: %s\n", res(syscall(SYS_io_cancel, ctx, NULL, ev)));
    prep(&cb, IOCB_CMD_PREAD, ro, buf, 4, 0);
    cb.aio_key = 5;
    printf("io_cancel with a wrong key: %s\n", res(syscall(SYS_io_cancel, ctx, &cb, ev)));
    io_submit(ctx, 1, &cp);
    printf("io_cancel of a request that completed: %s (key now %u)\n", res(syscall(SYS_io_cancel, ctx, &cb, ev)),
           cb.aio_key);
    reap("after cancel", ctx, 1, &cp);
    io_destroy(ctx);
    close(ro), close(wfd);
}

/* A context with room for few requests, filled without reaping until io_submit says EAGAIN. */
static void full_context(void) {
    aio_context_t ctx = 0;
    io_setup(1, &ctx);
    int fd = open("/dev/null", O_WRONLY);
    static struct iocb cbs[4096];
    long accepted = 0, r = 0;
    while (accepted < 4096) {
        struct iocb *cp = &cbs[accepted];
        prep(cp, IOCB_CMD_PWRITE, fd, "z", 1, 0);
        r = io_submit(ctx, 1, &cp);
        if (r != 1)
            break;
        accepted++;
    }
    int err = r < 0 ? errno : 0;
    static struct io_event ev[4096];
    struct timespec zero = {0, 0};
    long got = io_getevents(ctx, 0, 4096, ev, &zero);
    printf("full context: accepted at least 1: %d, then errno %d; reaped all: %d\n", accepted >= 1, err,
           got == accepted);
    struct iocb *cp = &cbs[0];
    printf("after reaping, io_submit %s\n", res(io_submit(ctx, 1, &cp)));
    io_destroy(ctx);
    close(fd);
}

static void forked_child(void) {
    aio_context_t ctx = 0;
    io_setup(4, &ctx);
    int fd = open("/dev/null", O_WRONLY);
    pid_t k = fork();
    if (k == 0) {
        struct iocb cb, *cp = &cb;
        prep(&cb, IOCB_CMD_PWRITE, fd, "c", 1, 0);
        long r = io_submit(ctx, 1, &cp);
        _exit(r < 0 ? errno : 100);
    }
    int st;
    waitpid(k, &st, 0);
    struct iocb cb, *cp = &cb;
    prep(&cb, IOCB_CMD_PWRITE, fd, "p", 1, 0);
    printf("forked child's io_submit on its parent's context: exit %d; parent's: %s\n", WEXITSTATUS(st),
           res(io_submit(ctx, 1, &cp)));
    io_destroy(ctx);
    close(fd);
}

/* O_DIRECT reads and writes (Linux performs them after io_submit returns, HRT before): eight writes of
 * 4 KiB in one io_submit, then eight reads of them, a misaligned buffer (the event's EINVAL),
 * a write on a descriptor open for reading (io_submit's EBADF), completions counted by an
 * eventfd, and io_destroy with requests in flight (it waits for them). */
static void direct_io(void) {
    char path[] = "/tmp/hrt-aio-direct-XXXXXX";
    int tmp = mkstemp(path);
    int fd = open(path, O_RDWR | O_DIRECT);
    int ro = open(path, O_RDONLY | O_DIRECT);
    unlink(path);
    close(tmp);
    if (fd < 0 || ro < 0) {
        printf("direct: no O_DIRECT here\n");
        return;
    }
    aio_context_t ctx = 0;
    io_setup(32, &ctx);
    char *buf;
    if (posix_memalign((void **)&buf, 4096, 16 * 4096 + 4096) != 0)
        return;
    struct iocb cb[8], *cp[8];
    for (int i = 0; i < 8; i++) {
        memset(buf + i * 4096, 'A' + i, 4096);
        prep(&cb[i], IOCB_CMD_PWRITE, fd, buf + i * 4096, 4096, (7 - i) * 4096LL);
        cb[i].aio_data = 60 + i;
        cp[i] = &cb[i];
    }
    printf("direct writes: io_submit %s\n", res(io_submit(ctx, 8, cp)));
    reap("direct writes", ctx, 8, cp);
    memset(buf + 8 * 4096, 0, 8 * 4096);
    int efd = eventfd(0, 0);
    for (int i = 0; i < 8; i++) {
        prep(&cb[i], IOCB_CMD_PREAD, fd, buf + (8 + i) * 4096, 4096, i * 4096LL);
        cb[i].aio_data = 70 + i;
        cb[i].aio_flags = IOCB_FLAG_RESFD;
        cb[i].aio_resfd = efd;
    }
    printf("direct reads: io_submit %s\n", res(io_submit(ctx, 8, cp)));
    reap("direct reads", ctx, 8, cp);
    uint64_t count = 0;
    long got = read(efd, &count, 8);
    printf("eventfd count %s %llu\n", res(got), (unsigned long long)count);
    printf("read back:");
    for (int i = 0; i < 8; i++)
        printf(" %c%c", buf[(8 + i) * 4096], buf[(8 + i) * 4096 + 4095]);
    printf("\n");
    prep(&cb[0], IOCB_CMD_PREAD, fd, buf + 1, 4096, 0);
    cb[0].aio_data = 80;
    printf("misaligned direct read: io_submit %s\n", res(io_submit(ctx, 1, cp)));
    reap("misaligned direct read", ctx, 1, cp);
    prep(&cb[0], IOCB_CMD_PWRITE, ro, buf, 4096, 0);
    printf("direct write on a read-only descriptor: io_submit %s\n", res(io_submit(ctx, 1, cp)));
    prep(&cb[0], IOCB_CMD_PREAD, ro, buf + 8 * 4096, 4096, 4096);
    printf("direct read on it: io_submit %s\n", res(io_submit(ctx, 1, cp)));
    reap("direct read on a read-only descriptor", ctx, 1, cp);
    /* io_destroy waits for what is in flight: the buffers are the program's again after it. */
    for (int i = 0; i < 8; i++) {
        prep(&cb[i], IOCB_CMD_PREAD, fd, buf + (8 + i) * 4096, 4096, i * 4096LL);
        cb[i].aio_data = 90 + i;
    }
    memset(buf + 8 * 4096, 0, 8 * 4096);
    long sub = io_submit(ctx, 8, cp);
    long des = io_destroy(ctx);
    printf("reads then io_destroy: io_submit %s, io_destroy %s\n", res(sub), res(des));
    int whole = 1;
    for (int i = 0; i < 8; i++)
        whole &= buf[(8 + i) * 4096 + 100] == 'A' + 7 - i;
    printf("buffers filled before io_destroy returned: %d\n", whole);
    close(efd);
    close(ro);
    close(fd);
    free(buf);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    setup_checks();
    file_io();
    pipe_io();
    submit_errors();
    full_context();
    direct_io();
    forked_child();
    printf("aio: done\n");
    return 0;
}
