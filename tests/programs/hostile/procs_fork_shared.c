/* Anonymous MAP_SHARED memory (and MAP_SHARED of /dev/zero) shared between a process and its
 * forked children, as real programs use it: a counter incremented by the parent and children
 * with atomics and under a process-shared pthread mutex, a process-shared semaphore the
 * children post, stores seen both ways, nested forks (a mapping made by the grandparent and one
 * made by the child), what a mapping holds before the fork, partial munmap, MADV_DONTNEED,
 * mremap before a fork, fresh and reused memory reading zero and staying private; a file a
 * child grows under its mapping; then msync's answers (0 or errno); futex requeues and
 * wake-ops that move and wake children's waiters on shared words. One line per case, the
 * same natively and under hrt.
 * Usage: procs_fork_shared */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ended.h"

#define CHILDREN 4
#define ROUNDS 2000
#define PAGE 4096

struct counters {
    atomic_long atomic;
    long locked;
    pthread_mutex_t mutex;
    sem_t done;
};

static void *shared_anonymous(size_t len) {
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

static void *shared_dev_zero(size_t len) {
    int fd = open("/dev/zero", O_RDWR);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        perror("mmap /dev/zero");
        exit(1);
    }
    return p;
}

static void bump(struct counters *c) {
    for (int i = 0; i < ROUNDS; i++) {
        atomic_fetch_add(&c->atomic, 1);
        pthread_mutex_lock(&c->mutex);
        c->locked++;
        pthread_mutex_unlock(&c->mutex);
    }
}

/* The parent and CHILDREN children increment both counters at once; each child posts. */
static void counters(const char *what, struct counters *c) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&c->mutex, &a);
    sem_init(&c->done, 1, 0);
    pid_t kids[CHILDREN];
    for (int i = 0; i < CHILDREN; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            bump(c);
            sem_post(&c->done);
            _exit(0);
        }
    }
    bump(c);
    for (int i = 0; i < CHILDREN; i++)
        sem_wait(&c->done);
    int ok = 0;
    for (int i = 0; i < CHILDREN; i++)
        ok += strcmp(ended(kids[i]), "exited 0") == 0;
    printf("%s: atomic %ld, locked %ld (of %d), %d children exited 0\n", what, (long)atomic_load(&c->atomic),
           c->locked, (CHILDREN + 1) * ROUNDS, ok);
}

/* A store by the child is seen by the parent, and one by the parent (after the fork) by the
 * child, which reports it in its exit status. */
static void both_ways(const char *what, volatile int *p) {
    int go[2];
    if (pipe(go) != 0)
        return;
    pid_t k = fork();
    if (k == 0) {
        char c;
        p[0] = 42;
        close(go[1]);
        if (read(go[0], &c, 1) != 1)
            _exit(99);
        _exit(p[1]);
    }
    close(go[0]);
    p[1] = 7;
    if (write(go[1], "x", 1) != 1)
        return;
    close(go[1]);
    const char *how = ended(k);
    printf("%s: parent reads %d, child %s\n", what, p[0], how);
}

/* Grandparent's mapping A, the child's mapping B (made after the first fork): the grandchild
 * writes both; the child sees B and copies it into A; the grandparent sees A. */
static void nested(void) {
    volatile int *a = shared_anonymous(PAGE);
    pid_t k = fork();
    if (k == 0) {
        volatile int *b = shared_anonymous(PAGE);
        pid_t g = fork();
        if (g == 0) {
            a[0] = 1001;
            b[0] = 2002;
            _exit(0);
        }
        const char *how = ended(g);
        a[1] = b[0];
        _exit(strcmp(how, "exited 0") == 0 ? 0 : 1);
    }
    const char *how = ended(k);
    printf("nested: grandchild wrote %d, child's own mapping %d, child %s\n", a[0], a[1], how);
}

/* Bytes stored before the first fork (on pages far apart) are the child's too. */
static void contents_before_fork(void) {
    size_t len = 8 << 20;
    unsigned char *p = shared_anonymous(len);
    long sum = 0;
    for (size_t off = 0; off < len; off += 64 * PAGE + 8)
        p[off] = (unsigned char)(off / PAGE), sum += p[off];
    pid_t k = fork();
    if (k == 0) {
        long got = 0;
        for (size_t off = 0; off < len; off += 64 * PAGE + 8)
            got += p[off];
        p[len - 1] = got == sum ? 'y' : 'n';
        _exit(0);
    }
    const char *how = ended(k);
    printf("before fork: the child saw the same bytes: %c, child %s\n", p[len - 1], how);
}

/* Three pages, the middle one unmapped after a first fork: the others stay shared with a
 * second child; the middle one, mapped again (private), reads zero and is not shared. */
static void partial_unmap(void) {
    volatile char *p = shared_anonymous(3 * PAGE);
    p[0] = 'a';
    pid_t k = fork();
    if (k == 0)
        _exit(p[0] == 'a' ? 0 : 1);
    const char *first = ended(k);
    munmap((char *)p + PAGE, PAGE);
    volatile char *mid =
        mmap((char *)p + PAGE, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    int zero = mid[0] == 0 && mid[PAGE - 1] == 0;
    k = fork();
    if (k == 0) {
        p[0] = 'b';
        p[2 * PAGE] = 'c';
        mid[0] = 'x';
        _exit(0);
    }
    printf("partial munmap: first child %s, ", first);
    const char *second = ended(k);
    printf("second %s; parent sees %c %c, reused page read zero %d and now holds %d\n", second, p[0],
           p[2 * PAGE], zero, mid[0]);
}

/* MADV_DONTNEED keeps shared anonymous memory's bytes (Linux drops the pages, which the shared
 * object still holds), before and after a fork made it shared with another process. */
static void dontneed(void) {
    volatile int *p = shared_anonymous(PAGE);
    p[0] = 5;
    madvise((void *)p, PAGE, MADV_DONTNEED);
    int before = p[0];
    pid_t k = fork();
    if (k == 0) {
        p[0] = 6;
        _exit(0);
    }
    const char *how = ended(k);
    madvise((void *)p, PAGE, MADV_DONTNEED);
    printf("MADV_DONTNEED: keeps %d before a fork, %d after, child %s\n", before, p[0], how);
}

/* mremap moving a mapping not yet shared with a child: it stays shared anonymous memory (only
 * its old size: Linux's grown part has no memory behind it). */
static void remap_then_fork(void) {
    char *p = shared_anonymous(PAGE);
    p[0] = 'm';
    char *q = mremap(p, PAGE, 64 * PAGE, MREMAP_MAYMOVE);
    if (q == MAP_FAILED) {
        printf("mremap: errno %d\n", errno);
        return;
    }
    pid_t k = fork();
    if (k == 0) {
        q[1] = q[0] == 'm' ? 'n' : '?';
        _exit(0);
    }
    const char *how = ended(k);
    printf("mremap then fork: the child wrote %c, child %s\n", q[1], how);
}

/* Ten children in turn add to one counter; a mapping made after munmap reads zero. */
static void ten_children(void) {
    volatile long *n = shared_anonymous(PAGE);
    for (int i = 0; i < 10; i++) {
        pid_t k = fork();
        if (k == 0) {
            (*n) += i + 1;
            _exit(0);
        }
        ended(k);
    }
    long total = *n;
    munmap((void *)n, PAGE);
    volatile long *m = shared_anonymous(2 * PAGE);
    int zero = m[0] == 0 && m[PAGE / sizeof(long)] == 0;
    printf("ten children in turn: counter %ld; a fresh mapping after munmap reads zero: %d\n", total, zero);
}

/* A forked child maps a file one page longer than it is, grows the file over that page and
 * writes there; the parent reads what it wrote from the file. */
static void file_grown_in_child(void) {
    char path[] = "/tmp/hrt-grow-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, PAGE) != 0)
        return;
    unlink(path);
    pid_t k = fork();
    if (k == 0) {
        char *m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED || ftruncate(fd, 2 * PAGE) != 0)
            _exit(1);
        m[PAGE + 3] = 'g';
        _exit(0);
    }
    const char *how = ended(k);
    char c = 0;
    ssize_t n = pread(fd, &c, 1, PAGE + 3);
    printf("file grown in a child: child %s, the file holds %zd %c\n", how, n, c);
    close(fd);
}

static void msync_case(const char *what, void *addr, size_t len, int flags) {
    errno = 0;
    int r = msync(addr, len, flags);
    printf("msync %s: %d errno %d\n", what, r, r ? errno : 0);
}

/* msync on a file mapping (the bytes reach the file), on anonymous memory, and its errors. */
static void msync_cases(void) {
    char path[] = "/tmp/hrt-msync-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0 || ftruncate(fd, 2 * PAGE) != 0)
        return;
    unlink(path);
    char *f = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    memcpy(f + 100, "synced", 6);
    msync_case("file MS_SYNC", f, 2 * PAGE, MS_SYNC);
    char back[7] = {0};
    printf("file holds \"%s\"\n", pread(fd, back, 6, 100) == 6 ? back : "?");
    msync_case("file MS_ASYNC", f, PAGE, MS_ASYNC);
    msync_case("file MS_INVALIDATE", f + PAGE, 100, MS_INVALIDATE);
    msync_case("file MS_SYNC|MS_INVALIDATE", f, 2 * PAGE, MS_SYNC | MS_INVALIDATE);
    msync_case("unaligned", f + 1, PAGE, MS_SYNC);
    msync_case("MS_SYNC|MS_ASYNC", f, PAGE, MS_SYNC | MS_ASYNC);
    msync_case("unknown flag", f, PAGE, 0x100);
    msync_case("no flag", f, PAGE, 0);
    msync_case("length 0", f, 0, MS_SYNC);
    char *anon = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    msync_case("private anonymous", anon, 2 * PAGE, MS_SYNC);
    munmap(anon + PAGE, PAGE);
    msync_case("partly unmapped", anon, 2 * PAGE, MS_SYNC);
    msync_case("unmapped", anon + PAGE, PAGE, MS_ASYNC);
    char *sh = shared_anonymous(PAGE);
    msync_case("shared anonymous", sh, PAGE, MS_SYNC);
    munmap(f, 2 * PAGE);
    close(fd);
}

static long futex(atomic_int *w, int op, int val, long val2, atomic_int *w2, int val3) {
    return syscall(SYS_futex, w, op, val, val2, w2, val3);
}

/* Children that wait on shared word w[0] until a wake-up ends the wait (exit 0). */
static void waiting_children(atomic_int *w, pid_t *kids, int n) {
    for (int i = 0; i < n; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            for (;;) {
                int v = atomic_load(w);
                long r = futex(w, FUTEX_WAIT, v, 0, NULL, 0);
                if (r == 0)
                    _exit(0);
                if (errno != EAGAIN && errno != EINTR)
                    _exit(errno);
            }
        }
    }
}

/* Moves `n` waiters of a to b with requeue `op` (waking none), retrying while they are not
 * all waiting yet; the number moved. */
static long move_waiters(atomic_int *a, atomic_int *b, int op, long n) {
    long moved = 0;
    for (int tries = 0; moved < n && tries < 20000; tries++) {
        long r = futex(a, op, 0, n - moved, b, 0);
        if (r < 0) {
            printf("requeue %d: errno %d\n", op, errno);
            break;
        }
        moved += r;
        if (moved < n)
            usleep(500);
    }
    return moved;
}

/* Non-private futex requeue and wake-op between processes: two children wait on word a; the
 * parent moves them to word b with FUTEX_CMP_REQUEUE (waking none; repeated until both were
 * moved, as they may not wait yet), checks that a wake of a finds nobody, then wakes b. A
 * child waiting on b is woken by FUTEX_WAKE_OP on (a, b). */
static void futex_between_processes(void) {
    atomic_int *w = shared_anonymous(PAGE);
    atomic_int *a = &w[0], *b = &w[16];
    pid_t kids[2];
    waiting_children(a, kids, 2);
    int wrong = futex(a, FUTEX_CMP_REQUEUE, 0, 2, b, 1) == -1 ? errno : 0;
    long moved = move_waiters(a, b, FUTEX_CMP_REQUEUE, 2);
    if (moved < 2)
        kill(kids[0], SIGKILL), kill(kids[1], SIGKILL);
    long left_on_a = futex(a, FUTEX_WAKE, 100, 0, NULL, 0);
    long woken_on_b = futex(b, FUTEX_WAKE, 100, 0, NULL, 0);
    const char *first = ended(kids[0]);
    printf("cmp-requeue between processes: wrong value errno %d, moved %ld, then a wakes %ld, b wakes "
           "%ld, first child %s, ",
           wrong, moved, left_on_a, woken_on_b, first);
    printf("second %s\n", ended(kids[1]));

    /* Plain FUTEX_REQUEUE, and FUTEX_WAKE_OP whose condition holds on b's old value. */
    waiting_children(a, kids, 1);
    moved = move_waiters(a, b, FUTEX_REQUEUE, 1);
    if (moved < 1)
        kill(kids[0], SIGKILL);
    atomic_store(b, 5);
    long none = futex(a, FUTEX_WAKE_OP, 1, 1, b, FUTEX_OP(FUTEX_OP_ADD, 1, FUTEX_OP_CMP_EQ, 0));
    long woke = futex(a, FUTEX_WAKE_OP, 1, 1, b, FUTEX_OP(FUTEX_OP_SET, 9, FUTEX_OP_CMP_EQ, 6));
    printf("requeue then wake-op: moved %ld, false condition wakes %ld, true condition wakes %ld, b "
           "holds %d, child %s\n",
           moved, none, woke, atomic_load(b), ended(kids[0]));
    munmap(w, PAGE);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    counters("shared anonymous", shared_anonymous(sizeof(struct counters)));
    counters("/dev/zero", shared_dev_zero(sizeof(struct counters)));
    both_ways("shared anonymous both ways", shared_anonymous(PAGE));
    both_ways("/dev/zero both ways", shared_dev_zero(PAGE));
    nested();
    contents_before_fork();
    partial_unmap();
    dontneed();
    remap_then_fork();
    ten_children();
    file_grown_in_child();
    msync_cases();
    futex_between_processes();
    return 0;
}
