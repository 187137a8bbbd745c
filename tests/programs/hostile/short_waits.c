/* Short waits on pipes and sockets, as on Linux. HRT tries a read, write or poll that would wait
 * again for a moment (~200 us) before a worker thread waits for it on the host; these cases
 * end their waits both inside and after that moment:
 * - a reader blocked on a pipe or socketpair gets every byte a writer sends after 0-400 us;
 * - a signal without SA_RESTART ends a blocked read with EINTR, one with SA_RESTART does not;
 * - poll and epoll_wait without a time limit return when the data comes;
 * - two threads talk over a socketpair (request, answer) and see every message. */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static void pause_us(long us) {
    struct timespec t = {0, us * 1000};
    nanosleep(&t, NULL);
}

struct late {
    int fd, rounds;
};

/* Writes round number i after a delay of (i * 37) % 400 us, one int at a time. */
static void *late_writer(void *arg) {
    struct late *l = arg;
    for (int i = 0; i < l->rounds; i++) {
        pause_us((i * 37) % 400);
        if (write(l->fd, &i, sizeof i) != sizeof i)
            perror("write");
    }
    return NULL;
}

static void late_data(const char *what, int rd, int wr) {
    struct late l = {wr, 300};
    pthread_t t;
    pthread_create(&t, NULL, late_writer, &l);
    int bad = 0, got = 0;
    for (int i = 0; i < l.rounds; i++) {
        int v = -1;
        ssize_t n = read(rd, &v, sizeof v);
        if (n != sizeof v || v != i)
            bad++;
        else
            got++;
    }
    pthread_join(t, NULL);
    printf("%s: %d of %d in order, %d wrong\n", what, got, l.rounds, bad);
}

static void waits_for_readiness(int rd, int wr) {
    struct late l = {wr, 100};
    pthread_t t;
    pthread_create(&t, NULL, late_writer, &l);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = rd};
    epoll_ctl(ep, EPOLL_CTL_ADD, rd, &ev);
    int polls = 0, epolls = 0, bad = 0;
    for (int i = 0; i < l.rounds; i++) {
        int v;
        if (i % 2) {
            struct pollfd p = {rd, POLLIN, 0};
            polls += poll(&p, 1, -1) == 1 && (p.revents & POLLIN);
        } else {
            struct epoll_event out;
            epolls += epoll_wait(ep, &out, 1, -1) == 1 && out.data.fd == rd;
        }
        if (read(rd, &v, sizeof v) != sizeof v || v != i)
            bad++;
    }
    pthread_join(t, NULL);
    close(ep);
    printf("poll and epoll_wait without a limit: %d polls, %d epoll_waits, %d wrong\n", polls, epolls, bad);
}

static volatile sig_atomic_t alarms;
static void on_alarm(int sig) {
    (void)sig;
    alarms++;
}

static void signals_end_reads(int rd) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL); /* no SA_RESTART */
    int eintr = 0, other = 0;
    for (int i = 0; i < 40; i++) {
        /* Again every 20 ms: a signal that comes before the read starts (the vCPU kept off its
         * host CPU for longer than the first expiry, or the timer's first setitimer starting
         * the kernel's timer thread) would leave the read waiting for good, natively too. */
        struct itimerval t = {{0, 20000}, {0, 150 + (i * 53) % 500}};
        setitimer(ITIMER_REAL, &t, NULL);
        int v;
        ssize_t n = read(rd, &v, sizeof v);
        if (n < 0 && errno == EINTR)
            eintr++;
        else
            other++;
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
    }
    printf("a signal without SA_RESTART: %d reads ended with EINTR, %d otherwise, a signal each: %d\n", eintr, other,
           alarms >= eintr);
}

static void *writes_after_signals(void *arg) {
    int fd = *(int *)arg;
    pause_us(3000);
    int v = 42;
    if (write(fd, &v, sizeof v) != sizeof v)
        perror("write");
    return NULL;
}

static void restarted_read(int rd, int wr) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    alarms = 0;
    struct itimerval t = {{0, 300}, {0, 100}};
    setitimer(ITIMER_REAL, &t, NULL);
    pthread_t th;
    pthread_create(&th, NULL, writes_after_signals, &wr);
    int v = 0;
    ssize_t n = read(rd, &v, sizeof v);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    pthread_join(th, NULL);
    printf("SA_RESTART: the read gave %zd bytes, %d, after signals: %s\n", n, v, alarms > 0 ? "yes" : "no");
}

static void *answers(void *arg) {
    int fd = *(int *)arg;
    char buf[32];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        buf[0] ^= 0x20;
        if (write(fd, buf, n) != n)
            break;
    }
    return NULL;
}

static void conversation(void) {
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    pthread_t t;
    pthread_create(&t, NULL, answers, &sv[1]);
    int bad = 0;
    for (int i = 0; i < 2000; i++) {
        char msg[16], back[16];
        int len = snprintf(msg, sizeof msg, "m%d", i);
        if (write(sv[0], msg, len) != len || read(sv[0], back, sizeof back) != len || back[0] != 'M' ||
            memcmp(back + 1, msg + 1, len - 1))
            bad++;
    }
    shutdown(sv[0], SHUT_WR);
    pthread_join(t, NULL);
    printf("conversation over a socketpair: 2000 messages, %d wrong\n", bad);
    close(sv[0]);
    close(sv[1]);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int p[2], s[2];
    pipe(p);
    socketpair(AF_UNIX, SOCK_STREAM, 0, s);
    late_data("pipe", p[0], p[1]);
    late_data("socketpair", s[0], s[1]);
    waits_for_readiness(p[0], p[1]);
    signals_end_reads(p[0]);
    restarted_read(s[0], s[1]);
    conversation();
    printf("short waits: done\n");
    return 0;
}
