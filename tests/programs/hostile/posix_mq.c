// POSIX message queues as Linux gives them: attributes, priorities (highest first), O_NONBLOCK
// (EAGAIN both ways) and mq_setattr, a timed receive that times out, a thread woken by a send,
// a blocked receive that a SA_RESTART handler restarts (and one without SA_RESTART: EINTR),
// poll on the descriptor, a forked child's message, notification by signal (SI_MESGQ with the
// value) and by thread (glibc's netlink helper), a receive buffer shorter than msg_len (Linux
// writes only the message), bad sizes and pointers (EMSGSIZE before EFAULT), names (EINVAL,
// ENOENT, EEXIST) and unlink.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "result_name.h"

static char name[64];
static mqd_t q;

static void *receiver(void *arg) {
    (void)arg;
    char buf[128];
    unsigned prio = 0;
    long n = mq_receive(q, buf, sizeof buf, &prio);
    printf("receiver: %s '%.*s' prio %u\n", result(n), n > 0 ? (int)n : 0, buf, prio);
    return 0;
}

static volatile sig_atomic_t alarms, notified_value, notified_code;
static volatile sig_atomic_t *alarms_seen; // `alarms`, in a page shared with a forked child
static void on_alarm(int s) {
    (void)s;
    alarms++;
    *alarms_seen = alarms;
}
static void on_notify(int s, siginfo_t *si, void *uc) {
    (void)s, (void)uc;
    notified_code = si->si_code;
    notified_value = si->si_value.sival_int;
}

// SIGALRM in `ms` ms, then every `every` ms (0: once).
static void alarm_in_ms(int ms, int every) {
    struct itimerval it = {{0, every * 1000}, {0, ms * 1000}};
    setitimer(ITIMER_REAL, &it, 0);
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int thread_notified;
static void notify_thread(union sigval v) {
    pthread_mutex_lock(&lock);
    thread_notified = v.sival_int;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
}

int main(void) {
    setvbuf(stdout, 0, _IOLBF, 0);
    snprintf(name, sizeof name, "/hrt-test-%d", getpid());
    struct mq_attr attr = {.mq_maxmsg = 4, .mq_msgsize = 64};
    q = mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &attr);
    printf("mq_open: %s\n", q >= 0 ? "ok" : result(-1));
    printf("again with O_EXCL: %s\n", result(mq_open(name, O_RDWR | O_CREAT | O_EXCL, 0600, &attr)));
    printf("no such queue: %s\n", result(mq_open("/hrt-test-none", O_RDWR)));
    printf("a name with a slash: %s\n", result(mq_open("/a/b", O_RDWR | O_CREAT, 0600, 0)));
    {
        /* A bad timeout is refused before the descriptor is looked at (EINVAL, EFAULT). */
        char b[64];
        struct timespec bad_ns = {0, -1}, bad_s = {-1, 0};
        printf("timedreceive, bad descriptor and nanoseconds: %s\n",
               result(mq_timedreceive((mqd_t)-1, b, sizeof b, 0, &bad_ns)));
        printf("timedsend, bad descriptor and seconds: %s\n", result(mq_timedsend((mqd_t)-1, b, 8, 0, &bad_s)));
        printf("timedreceive, bad descriptor and timeout at 8: %s\n",
               result(mq_timedreceive((mqd_t)-1, b, sizeof b, 0, (struct timespec *)8)));
    }
    struct mq_attr bad = {.mq_maxmsg = 0, .mq_msgsize = 64};
    printf("maxmsg 0: %s\n", result(mq_open("/hrt-test-bad", O_RDWR | O_CREAT, 0600, &bad)));
    struct mq_attr got;
    mq_getattr(q, &got);
    printf("attr: flags %ld maxmsg %ld msgsize %ld curmsgs %ld\n", got.mq_flags, got.mq_maxmsg, got.mq_msgsize,
           got.mq_curmsgs);

    printf("send low: %s\n", result(mq_send(q, "low", 3, 1)));
    printf("send high: %s\n", result(mq_send(q, "high", 4, 9)));
    printf("send mid: %s\n", result(mq_send(q, "mid", 3, 5)));
    char buf[128];
    unsigned prio;
    for (int i = 0; i < 3; i++) {
        long n = mq_receive(q, buf, sizeof buf, &prio);
        printf("receive: %s '%.*s' prio %u\n", result(n), n > 0 ? (int)n : 0, buf, prio);
    }
    struct timespec soon;
    clock_gettime(CLOCK_REALTIME, &soon);
    soon.tv_nsec += 50000000;
    if (soon.tv_nsec >= 1000000000)
        soon.tv_sec++, soon.tv_nsec -= 1000000000;
    printf("timed receive, empty: %s\n", result(mq_timedreceive(q, buf, sizeof buf, 0, &soon)));
    struct timespec bad_time = {0, 2000000000};
    printf("timed receive, bad timeout: %s\n", result(mq_timedreceive(q, buf, sizeof buf, 0, &bad_time)));

    // Non-blocking both ways, set with mq_setattr.
    struct mq_attr nb = {.mq_flags = O_NONBLOCK}, old;
    long set = mq_setattr(q, &nb, &old);
    printf("setattr: %s, old flags %ld\n", result(set), old.mq_flags);
    printf("receive, non-blocking and empty: %s\n", result(mq_receive(q, buf, sizeof buf, 0)));
    for (int i = 0; i < 4; i++)
        mq_send(q, "x", 1, 0);
    printf("send, non-blocking and full: %s\n", result(mq_send(q, "x", 1, 0)));
    struct pollfd p = {q, POLLIN | POLLOUT, 0};
    long ready = poll(&p, 1, 0);
    printf("poll full: %s revents %#x\n", result(ready), p.revents);
    for (int i = 0; i < 4; i++)
        mq_receive(q, buf, sizeof buf, 0);
    p.revents = 0;
    ready = poll(&p, 1, 0);
    printf("poll empty: %s revents %#x\n", result(ready), p.revents);
    nb.mq_flags = 0;
    mq_setattr(q, &nb, 0);

    // A waiting receiver, woken by a send.
    pthread_t th;
    pthread_create(&th, 0, receiver, 0);
    pause_ms(50);
    long sent = mq_send(q, "wake", 4, 3);
    pthread_join(th, 0);
    printf("send wake: %s\n", result(sent));

    // A waiting receive and a handler: restarted with SA_RESTART, EINTR without. The alarm is
    // armed before the fork, and the child sends only after the handler ran (waiting at most
    // 10 s), 150 ms after the alarm at the earliest: however late a loaded host runs either.
    alarms_seen = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigaction(SIGALRM, &sa, 0);
    alarm_in_ms(50, 0);
    pid_t c = fork();
    if (c == 0) {
        pause_ms(150);
        for (int i = 0; i < 1000 && !*alarms_seen; i++)
            pause_ms(10);
        mq_send(q, "late", 4, 0);
        _exit(0);
    }
    long n = mq_receive(q, buf, sizeof buf, &prio);
    printf("restarted receive: %s '%.*s', alarms %d\n", result(n), n > 0 ? (int)n : 0, buf, (int)alarms);
    waitpid(c, 0, 0);
    sa.sa_flags = 0;
    sigaction(SIGALRM, &sa, 0);
    // Every 50 ms until the receive ends (one before it would leave it waiting for good).
    alarm_in_ms(50, 50);
    printf("interrupted receive: %s\n", result(mq_receive(q, buf, sizeof buf, &prio)));
    alarm_in_ms(0, 0);

    // Notification by signal, with the value.
    struct sigaction ns = {.sa_sigaction = on_notify, .sa_flags = SA_SIGINFO};
    sigaction(SIGUSR1, &ns, 0);
    struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1, .sigev_value.sival_int = 42};
    printf("notify: %s\n", result(mq_notify(q, &ev)));
    printf("notify again: %s\n", result(mq_notify(q, &ev)));
    mq_send(q, "n", 1, 0);
    for (int i = 0; i < 2000 && !notified_value; i++)
        pause_ms(5);
    printf("notified: code %s value %d\n", notified_code == SI_MESGQ ? "SI_MESGQ" : "other", (int)notified_value);
    mq_receive(q, buf, sizeof buf, 0);

    // Notification by thread.
    struct sigevent te = {.sigev_notify = SIGEV_THREAD, .sigev_notify_function = notify_thread,
                          .sigev_value.sival_int = 7};
    printf("notify by thread: %s\n", result(mq_notify(q, &te)));
    mq_send(q, "t", 1, 0);
    pthread_mutex_lock(&lock);
    struct timespec limit;
    clock_gettime(CLOCK_REALTIME, &limit);
    limit.tv_sec += 5;
    while (!thread_notified && pthread_cond_timedwait(&cond, &lock, &limit) == 0)
        ;
    pthread_mutex_unlock(&lock);
    printf("thread notified: %d\n", thread_notified);
    mq_receive(q, buf, sizeof buf, 0);
    printf("unregister: %s\n", result(mq_notify(q, 0)));

    // Sizes and pointers.
    printf("receive into less than msgsize: %s\n", result(mq_receive(q, buf, 63, 0)));
    printf("send more than msgsize: %s\n", result(mq_send(q, buf, 65, 0)));
    printf("send priority too high: %s\n", result(mq_send(q, "p", 1, 1u << 20)));
    char *volatile null = 0;
    printf("send NULL: %s\n", result(mq_send(q, null, 4, 0)));
    char *page = mmap(0, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(page + 4096, 4096);
    char *edge = page + 4096 - 8;
    mq_send(q, "short", 5, 0);
    n = mq_receive(q, edge, 64, 0);
    printf("receive into 8 bytes with msg_len 64: %s '%.*s'\n", result(n), n > 0 ? (int)n : 0, edge);
    mq_send(q, "longer than eight", 17, 0);
    printf("receive of 17 bytes there: %s\n", result(mq_receive(q, edge, 64, 0)));
    struct mq_attr after;
    mq_getattr(q, &after);
    printf("and the message is gone: curmsgs %ld\n", after.mq_curmsgs);
    printf("getattr NULL-ish: %s\n", result(syscall(245, q, 0, (void *)16)));
    printf("bad descriptor: %s\n", result(mq_send(12345, "x", 1, 0)));

    printf("close: %s\n", result(mq_close(q)));
    printf("unlink: %s\n", result(mq_unlink(name)));
    printf("unlink again: %s\n", result(mq_unlink(name)));
    printf("posix mq: done\n");
    return 0;
}
