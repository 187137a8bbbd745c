// epoll and eventfd as Linux has them: epoll over pipes, eventfds, another epoll instance and
// stdin; level- and edge-triggered events, EPOLLONESHOT, EPOLL_CTL_MOD/DEL, the event's data
// word coming back unchanged, errors (EBADF, EEXIST, ENOENT, EINVAL, EPERM, EFAULT), dups of
// one descriptor as separate entries, close-on-exec and non-blocking flags, eventfd's counter
// and semaphore modes, a thread blocked in epoll_wait woken by another thread's write, and a
// signal interrupting epoll_wait (EINTR, with or without SA_RESTART), epoll_pwait's signal mask.
// One line per case; the same natively and under hrt.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "handler.h"
#include "proc_state.h"
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "report.h"

#define DATA 0x1122334455667788ull

static void sleep_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&t, NULL);
}

// One wait of at most `max` events with `timeout` ms: the count, then each event's flags and data.
static void wait_report(const char *what, int ep, int max, int timeout) {
    struct epoll_event ev[8];
    memset(ev, 0, sizeof ev);
    int n = epoll_wait(ep, ev, max, timeout);
    report(what, n);
    for (int i = 0; i < n; i++)
        printf("  events 0x%x data 0x%llx\n", ev[i].events, (unsigned long long)ev[i].data.u64);
}

static int add(int ep, int fd, uint32_t events, uint64_t data) {
    struct epoll_event ev = {.events = events, .data.u64 = data};
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static void drain(int fd) {
    char buf[64];
    while (read(fd, buf, sizeof buf) == sizeof buf) {
    }
}

static void creation(void) {
    report("epoll_create 0", epoll_create(0));
    report("epoll_create -1", epoll_create(-1));
    int a = epoll_create(1);
    report("epoll_create 1 cloexec", fcntl(a, F_GETFD));
    int b = epoll_create1(EPOLL_CLOEXEC);
    report("epoll_create1 CLOEXEC cloexec", fcntl(b, F_GETFD));
    report("epoll_create1 bad flags", epoll_create1(1));
    report("close epoll", close(a));
    report("close epoll again", close(a));
    report("read epoll", read(b, &a, sizeof a));
    close(b);
}

static void control_errors(void) {
    int ep = epoll_create1(0), p[2];
    pipe(p);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = DATA};
    report("add", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
    report("add again EEXIST", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
    report("mod unwatched ENOENT", epoll_ctl(ep, EPOLL_CTL_MOD, p[1], &ev));
    report("del unwatched ENOENT", epoll_ctl(ep, EPOLL_CTL_DEL, p[1], NULL));
    report("bad epfd EBADF", epoll_ctl(999, EPOLL_CTL_ADD, p[0], &ev));
    report("negative epfd EBADF", epoll_ctl(-1, EPOLL_CTL_ADD, p[0], &ev));
    report("bad fd EBADF", epoll_ctl(ep, EPOLL_CTL_ADD, 999, &ev));
    report("epfd not epoll EINVAL", epoll_ctl(p[1], EPOLL_CTL_ADD, p[0], &ev));
    report("epoll on itself EINVAL", epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev));
    report("bad op EINVAL", epoll_ctl(ep, 77, p[1], &ev));
    report("NULL event EFAULT", epoll_ctl(ep, EPOLL_CTL_ADD, p[1], NULL));
    report("unmapped event EFAULT", epoll_ctl(ep, EPOLL_CTL_ADD, p[1], (struct epoll_event *)8));
    int f = open("/proc/self/exe", O_RDONLY);
    report("regular file EPERM", epoll_ctl(ep, EPOLL_CTL_ADD, f, &ev));
    close(f);
    report("del with NULL event", epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL));
    close(p[0]);
    close(p[1]);
    close(ep);
}

// epoll_wait without the compiler's checks of the buffer (these cases pass bad ones on purpose).
static long raw_wait(int ep, void *events, long max, int timeout) {
    return syscall(SYS_epoll_wait, ep, events, max, timeout);
}

static void wait_errors(void) {
    int ep = epoll_create1(0), p[2];
    pipe(p);
    struct epoll_event ev[2];
    report("wait maxevents 0 EINVAL", epoll_wait(ep, ev, 0, 0));
    report("wait maxevents -1 EINVAL", raw_wait(ep, ev, -1, 0));
    report("wait maxevents INT_MAX EINVAL", raw_wait(ep, ev, 0x7fffffff, 0));
    report("wait bad epfd EBADF", epoll_wait(999, ev, 2, 0));
    report("wait not epoll EINVAL", epoll_wait(p[0], ev, 2, 0));
    report("wait kernel address EFAULT", raw_wait(ep, (void *)0xffff800000000000ull, 2, 0));
    // Nothing ready: the buffer is not touched, so a bad one is no error.
    report("wait NULL nothing ready", raw_wait(ep, NULL, 2, 0));
    add(ep, p[0], EPOLLIN, DATA);
    write(p[1], "x", 1);
    report("wait NULL ready EFAULT", raw_wait(ep, NULL, 2, 0));
    void *ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    report("wait read-only EFAULT", raw_wait(ep, ro, 2, 0));
    // The event was not lost.
    wait_report("wait after EFAULT", ep, 2, 0);
    char *rw = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(rw + 4096, 4096);
    // 2 events asked for, room for one before the hole.
    struct epoll_event *last = (struct epoll_event *)(rw + 4096 - sizeof(struct epoll_event));
    report("wait running into a hole", raw_wait(ep, last, 2, 0));
    printf("  data 0x%llx\n", (unsigned long long)last->data.u64);
    sigset_t set;
    sigemptyset(&set);
    report("pwait bad mask size EINVAL", syscall(SYS_epoll_pwait, ep, ev, 2, 0, &set, 7));
    report("pwait mask", epoll_pwait(ep, ev, 2, 0, &set));
    struct timespec zero = {0, 0}, bad = {0, 1000000000};
    report("pwait2 zero", syscall(SYS_epoll_pwait2, ep, ev, 2, &zero, NULL, 8));
    report("pwait2 bad timespec EINVAL", syscall(SYS_epoll_pwait2, ep, ev, 2, &bad, NULL, 8));
    report("pwait2 unmapped timespec EFAULT", syscall(SYS_epoll_pwait2, ep, ev, 2, (void *)8, NULL, 8));
    drain(p[0]);
    report("wait 50 ms timeout", epoll_wait(ep, ev, 2, 50));
    struct timespec ms30 = {0, 30000000};
    report("pwait2 30 ms timeout", syscall(SYS_epoll_pwait2, ep, ev, 2, &ms30, NULL, 8));
    struct timespec us100 = {0, 100000};
    report("pwait2 100 us timeout", syscall(SYS_epoll_pwait2, ep, ev, 2, &us100, NULL, 8));
    report("pwait2 100 us timeout, no room", syscall(SYS_epoll_pwait2, ep, NULL, 2, &us100, NULL, 8));
    close(p[0]);
    close(p[1]);
    close(ep);
}

static void triggering(void) {
    int ep = epoll_create1(0), p[2];
    pipe(p);
    char c;
    // Level-triggered: reported while data is there.
    add(ep, p[0], EPOLLIN, DATA);
    wait_report("level nothing", ep, 8, 0);
    write(p[1], "ab", 2);
    wait_report("level data", ep, 8, 0);
    wait_report("level data again", ep, 8, 0);
    read(p[0], &c, 1);
    wait_report("level one byte left", ep, 8, 0);
    read(p[0], &c, 1);
    wait_report("level drained", ep, 8, 0);
    // MOD: edge-triggered, new data word.
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u64 = 42};
    report("mod to edge", epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev));
    write(p[1], "ab", 2);
    wait_report("edge data", ep, 8, 0);
    wait_report("edge no new data", ep, 8, 0);
    write(p[1], "c", 1);
    wait_report("edge new data", ep, 8, 0);
    drain(p[0]);
    // One-shot: reported once, until re-armed by MOD.
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.u64 = 7;
    report("mod to oneshot", epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev));
    write(p[1], "d", 1);
    wait_report("oneshot first", ep, 8, 0);
    wait_report("oneshot disarmed", ep, 8, 0);
    report("mod rearm", epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev));
    wait_report("oneshot rearmed", ep, 8, 0);
    drain(p[0]);
    // The write end: writable; closing the read end gives EPOLLERR.
    add(ep, p[1], EPOLLOUT, 0xabcdef);
    wait_report("writable", ep, 8, 0);
    report("del read end", epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL));
    report("del again ENOENT", epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL));
    close(p[0]);
    wait_report("reader gone", ep, 8, 0);
    // Closing the only descriptor removes it from the interest list.
    close(p[1]);
    wait_report("closed", ep, 8, 0);
    // A dup keeps the registration alive after the registered number is closed.
    pipe(p);
    int d = dup(p[0]);
    add(ep, p[0], EPOLLIN, 99);
    close(p[0]);
    write(p[1], "e", 1);
    wait_report("registered number closed, dup open", ep, 8, 0);
    close(d);
    wait_report("dup closed too", ep, 8, 0);
    close(p[1]);
    close(ep);
}

// Dups of one descriptor are distinct entries (Linux keys the interest list by file and
// number): each added with its own data word, reported, modified and deleted on its own.
static void dups(void) {
    int ep = epoll_create1(0), p[2];
    pipe(p);
    int d = dup(p[0]), d2 = fcntl(p[0], F_DUPFD_CLOEXEC, 40), d3 = dup2(p[0], 50);
    report("add original", add(ep, p[0], EPOLLIN, 1));
    report("add dup", add(ep, d, EPOLLIN, 2));
    report("add F_DUPFD dup", add(ep, d2, EPOLLIN, 3));
    report("add dup2 dup", add(ep, d3, EPOLLIN, 4));
    report("add dup again EEXIST", add(ep, d, EPOLLIN, 5));
    write(p[1], "x", 1);
    wait_report("dups: one event each", ep, 8, 0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 6};
    report("mod dup", epoll_ctl(ep, EPOLL_CTL_MOD, d, &ev));
    report("del original", epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL));
    wait_report("dups: original deleted, dup modified", ep, 8, 0);
    close(d2);
    wait_report("dups: a closed dup's entry stays while the file is open", ep, 8, 0);
    close(d);
    close(d3);
    close(p[0]);
    wait_report("dups: all closed", ep, 8, 0);
    close(p[1]);
    close(ep);
}

static void nested_and_stdin(void) {
    int inner = epoll_create1(0), outer = epoll_create1(0), p[2];
    pipe(p);
    add(inner, p[0], EPOLLIN, 1);
    report("add epoll to epoll", add(outer, inner, EPOLLIN, 2));
    report("add back EINVAL or ELOOP", add(inner, outer, EPOLLIN, 3));
    wait_report("nested nothing", outer, 8, 0);
    write(p[1], "x", 1);
    wait_report("nested ready", outer, 8, 0);
    wait_report("inner ready", inner, 8, 0);
    // The tests run us with stdin from /dev/null: no polling there.
    report("stdin /dev/null EPERM", add(outer, 0, EPOLLIN, 4));
    close(p[0]);
    close(p[1]);
    close(inner);
    close(outer);
}

static void eventfds(void) {
    uint64_t v = 0;
    report("eventfd2 bad flags", eventfd(0, 0x4000));
    int e = eventfd(3, EFD_CLOEXEC);
    report("EFD_CLOEXEC cloexec", fcntl(e, F_GETFD));
    report("read", read(e, &v, 8));
    printf("  value %llu\n", (unsigned long long)v);
    v = 2;
    write(e, &v, 8);
    v = 5;
    write(e, &v, 8);
    report("read after writes", read(e, &v, 8));
    printf("  value %llu\n", (unsigned long long)v);
    report("read 4 bytes EINVAL", read(e, &v, 4));
    v = ~0ull;
    report("write all ones EINVAL", write(e, &v, 8));
    report("write 4 bytes EINVAL", write(e, &v, 4));
    close(e);
    e = syscall(SYS_eventfd, 1);
    report("eventfd cloexec", fcntl(e, F_GETFD));
    report("eventfd nonblock", fcntl(e, F_GETFL) & O_NONBLOCK);
    close(e);
    e = eventfd(3, EFD_SEMAPHORE | EFD_NONBLOCK);
    report("EFD_NONBLOCK", (fcntl(e, F_GETFL) & O_NONBLOCK) != 0);
    for (int i = 0; i < 4; i++) {
        v = 0;
        long r = read(e, &v, 8);
        char what[32];
        snprintf(what, sizeof what, "semaphore read %d", i);
        report(what, r);
        printf("  value %llu\n", (unsigned long long)v);
    }
    v = 0xfffffffffffffffeull;
    report("write to the maximum", write(e, &v, 8));
    v = 1;
    report("write past the maximum EAGAIN", write(e, &v, 8));
    int ep = epoll_create1(0);
    add(ep, e, EPOLLIN | EPOLLOUT, 5);
    wait_report("eventfd full", ep, 8, 0);
    read(e, &v, 8);
    wait_report("eventfd after a read", ep, 8, 0);
    close(ep);
    close(e);
}

// A thread blocked in epoll_wait (no timeout) and woken by writes from another thread.
static int shared_ep, shared_efd, shared_pipe[2];
static volatile int waiter_ready;
static struct epoll_event woken[3];
static int woken_n[3];
static long woken_err;

static void *waiter(void *arg) {
    (void)arg;
    for (int i = 0; i < 3; i++) {
        waiter_ready = i + 1;
        woken_n[i] = epoll_wait(shared_ep, &woken[i], 1, -1);
        if (woken_n[i] < 0)
            woken_err = errno;
        uint64_t v;
        char c;
        if (woken[i].data.u64 == 1)
            read(shared_efd, &v, 8);
        else
            read(shared_pipe[0], &c, 1);
    }
    return NULL;
}

static void wake_up(void) {
    shared_ep = epoll_create1(EPOLL_CLOEXEC);
    shared_efd = eventfd(0, 0);
    pipe2(shared_pipe, O_CLOEXEC);
    add(shared_ep, shared_efd, EPOLLIN, 1);
    add(shared_ep, shared_pipe[0], EPOLLIN, 2);
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    for (int i = 0; i < 3; i++) {
        while (waiter_ready != i + 1)
            sched_yield();
        sleep_ms(100);
        if (i == 1) {
            write(shared_pipe[1], "p", 1);
        } else {
            uint64_t v = 1;
            write(shared_efd, &v, 8);
        }
    }
    pthread_join(t, NULL);
    for (int i = 0; i < 3; i++)
        printf("woken %d: n %d events 0x%x data %llu\n", i, woken_n[i], woken[i].events,
               (unsigned long long)woken[i].data.u64);
    report("woken errno", woken_err);
    close(shared_ep);
    close(shared_efd);
    close(shared_pipe[0]);
    close(shared_pipe[1]);
}

// A signal with a handler ends a blocked epoll_wait with EINTR, with or without SA_RESTART.
static volatile int handled;
static volatile long sig_result, sig_errno;
static volatile int sig_ready; // the waiter's thread id once it is about to wait

static void on_usr1(int sig) {
    (void)sig;
    handled++;
}

static void *sig_waiter(void *arg) {
    int ep = *(int *)arg;
    struct epoll_event ev;
    sig_ready = syscall(SYS_gettid);
    sig_result = epoll_wait(ep, &ev, 1, -1);
    sig_errno = errno;
    return NULL;
}

// Starts `waiter` on an epoll instance watching an idle pipe; once it is about to wait, sends it
// SIGUSR1 (if `send`) when /proc shows it asleep (waiting at most 10 s: a loaded host may run it
// late); reports how its wait ended.
static void signal_waiter(void *(*waiter)(void *), int send, const char *what) {
    int ep = epoll_create1(0), p[2];
    pipe(p);
    add(ep, p[0], EPOLLIN, 1);
    handled = 0;
    sig_ready = 0;
    pthread_t t;
    pthread_create(&t, NULL, waiter, &ep);
    while (!sig_ready)
        sched_yield();
    if (send) {
        char stat[64];
        snprintf(stat, sizeof stat, "/proc/self/task/%d/stat", sig_ready);
        for (int i = 0; i < 1000 && !sleeps(stat); i++)
            sleep_ms(10);
        pthread_kill(t, SIGUSR1);
    }
    pthread_join(t, NULL);
    printf("%s: result %ld errno %ld handled %d\n", what, sig_result, sig_errno, handled);
    close(p[0]);
    close(p[1]);
    close(ep);
}

static void interrupted(int flags, const char *what) {
    set_handler(SIGUSR1, on_usr1, flags);
    signal_waiter(sig_waiter, 1, what);
}

// `calls_epoll stdin`: stdin (a pipe the test writes and closes) watched by epoll until its end.
static int watch_stdin(void) {
    int ep = epoll_create1(0);
    report("add stdin", add(ep, 0, EPOLLIN, 0x5a));
    long total = 0;
    for (;;) {
        struct epoll_event ev;
        int n = epoll_wait(ep, &ev, 1, -1);
        if (n != 1 || ev.data.u64 != 0x5a || !(ev.events & (EPOLLIN | EPOLLHUP))) {
            report("stdin wait", n);
            return 1;
        }
        char buf[4096];
        long r = read(0, buf, sizeof buf);
        if (r < 0) {
            report("stdin read", r);
            return 1;
        }
        if (r == 0)
            break;
        total += r;
    }
    printf("stdin: %ld bytes, then its end\n", total);
    wait_report("stdin at its end", ep, 8, 0);
    return 0;
}

// epoll_pwait's mask: SIGUSR1, blocked in the thread, is unblocked for the wait only. Sent
// before the wait (pending) or during it, it ends the wait with EINTR and its handler runs;
// afterwards the thread's own mask is back.
static volatile int pwait_pending;

static void *masked_waiter(void *arg) {
    int ep = *(int *)arg;
    sigset_t usr1, none, after;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigemptyset(&none);
    pthread_sigmask(SIG_BLOCK, &usr1, NULL);
    struct epoll_event ev;
    if (pwait_pending) {
        raise(SIGUSR1);
        report("pending: blocked signal left pending by a zero wait with the old mask",
               epoll_pwait(ep, &ev, 1, 0, &usr1));
        printf("  handled %d\n", handled);
    }
    sig_ready = syscall(SYS_gettid);
    sig_result = epoll_pwait(ep, &ev, 1, -1, &none);
    sig_errno = errno;
    pthread_sigmask(SIG_BLOCK, NULL, &after);
    printf("  after the wait: SIGUSR1 blocked %d\n", sigismember(&after, SIGUSR1));
    return NULL;
}

static void masked_wait(int pending, const char *what) {
    pwait_pending = pending;
    signal_waiter(masked_waiter, !pending, what);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 1 && !strcmp(argv[1], "stdin"))
        return watch_stdin();
    creation();
    control_errors();
    wait_errors();
    triggering();
    dups();
    nested_and_stdin();
    eventfds();
    wake_up();
    interrupted(0, "signal without SA_RESTART");
    interrupted(SA_RESTART, "signal with SA_RESTART");
    masked_wait(0, "epoll_pwait mask unblocks a signal sent during the wait");
    masked_wait(1, "epoll_pwait mask unblocks a pending signal");
    return 0;
}
