// timerfd: relative and periodic timers counted by read, an absolute deadline on the
// program's monotonic and real-time clocks (which count from the kernel's boot under hrt, so
// the monitor moves the deadline to the host's clock), poll and epoll beside a pipe, gettime,
// the old value, disarming, O_NONBLOCK's EAGAIN, and the errors of bad clocks, flags, times and
// pointers. Only facts that hold whatever the machine's load are printed. Compared with the
// native run.
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static struct timespec at(long long ns) {
    struct timespec t = {ns / 1000000000LL, ns % 1000000000LL};
    return t;
}

static void show(const char *what, long r) {
    printf("%-44s %s\n", what, r >= 0 ? "ok" : strerror(errno));
}

// An absolute deadline 30 ms ahead on `c`: the wait ends no earlier than it, and not
// seconds later (a deadline moved by the boot offset would be hours off either way).
static void absolute(clockid_t c, const char *name) {
    int fd = timerfd_create(c, 0);
    long long start = now_ns(c);
    struct itimerspec its = {{0, 0}, at(start + 30000000LL)};
    show(name, timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL));
    uint64_t n = 0;
    long r = read(fd, &n, sizeof n);
    long long waited = now_ns(c) - start;
    printf("  read %ld, count %llu, waited >= 30 ms: %d, < 10 s: %d\n", r, (unsigned long long)n,
           waited >= 30000000LL, waited < 10000000000LL);
    // A deadline in the past expires at once (half of "now": the monotonic clocks count
    // from boot, which under hrt is the program's start).
    its.it_value = at(start / 2);
    timerfd_settime(fd, TFD_TIMER_ABSTIME, &its, NULL);
    r = read(fd, &n, sizeof n);
    printf("  past deadline: read %ld, count %llu\n", r, (unsigned long long)n);
    close(fd);
}

int main(void) {
    // TFD_IOC_SET_TICKS sets the expiry count a read then returns (it was ENOTTY).
    int ticked = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    uint64_t ticks = 5, count = 0;
    show("ioctl TFD_IOC_SET_TICKS", ioctl(ticked, _IOW('T', 0, uint64_t), &ticks));
    show("read after it", read(ticked, &count, sizeof count));
    printf("  ticks read: %lu\n", (unsigned long)count);
    close(ticked);

    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    show("create monotonic", fd);
    // Periodic: 5 ms first, then every 5 ms; three reads count at least three expirations.
    struct itimerspec its = {{0, 5000000}, {0, 5000000}};
    show("settime periodic", timerfd_settime(fd, 0, &its, NULL));
    uint64_t n, total = 0;
    for (int i = 0; i < 3; i++) {
        if (read(fd, &n, sizeof n) == sizeof n)
            total += n;
    }
    printf("  periodic expirations >= 3: %d\n", total >= 3);
    struct itimerspec cur;
    show("gettime", timerfd_gettime(fd, &cur));
    printf("  interval %ld.%09ld, value <= interval: %d\n", (long)cur.it_interval.tv_sec, cur.it_interval.tv_nsec,
           cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec <= 5000000);
    // Disarm; the old value is the periodic timer.
    struct itimerspec off = {{0, 0}, {0, 0}}, old;
    show("disarm", timerfd_settime(fd, 0, &off, &old));
    printf("  old interval %ld.%09ld\n", (long)old.it_interval.tv_sec, old.it_interval.tv_nsec);
    timerfd_gettime(fd, &cur);
    printf("  disarmed: %d\n", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);

    absolute(CLOCK_MONOTONIC, "absolute monotonic");
    absolute(CLOCK_BOOTTIME, "absolute boottime");
    absolute(CLOCK_REALTIME, "absolute realtime");

    // Non-blocking: nothing expired yet.
    int nb = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    struct itimerspec later = {{0, 0}, {10, 0}};
    timerfd_settime(nb, 0, &later, NULL);
    show("read before expiry (nonblocking)", read(nb, &n, sizeof n));

    // poll and epoll beside a pipe: the timer becomes readable, the pipe does not.
    int p[2];
    pipe(p);
    struct itimerspec soon = {{0, 0}, {0, 10000000}};
    timerfd_settime(nb, 0, &soon, NULL);
    struct pollfd pf[2] = {{p[0], POLLIN, 0}, {nb, POLLIN, 0}};
    int r = poll(pf, 2, 5000);
    printf("poll: %d, pipe %d, timer %d\n", r, pf[0].revents, pf[1].revents);
    read(nb, &n, sizeof n);
    int ep = epoll_create1(0);
    struct epoll_event ev = {EPOLLIN, {.u64 = 7}};
    epoll_ctl(ep, EPOLL_CTL_ADD, nb, &ev);
    ev.data.u64 = 8;
    epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev);
    timerfd_settime(nb, 0, &soon, NULL);
    struct epoll_event got[2];
    r = epoll_wait(ep, got, 2, 5000);
    printf("epoll: %d, data %llu\n", r, r > 0 ? (unsigned long long)got[0].data.u64 : 0ULL);

    // Errors.
    show("create bad clock", timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0));
    show("create bad flags", timerfd_create(CLOCK_MONOTONIC, 0x4));
    show("settime bad flags", timerfd_settime(fd, 0x10, &its, NULL));
    struct itimerspec bad = {{0, 0}, {0, 1000000000L}};
    show("settime nsec out of range", timerfd_settime(fd, 0, &bad, NULL));
    show("settime bad pointer", timerfd_settime(fd, 0, (void *)8, NULL));
    show("gettime bad pointer", timerfd_gettime(fd, (void *)8));
    show("settime on a pipe", timerfd_settime(p[0], 0, &its, NULL));
    show("settime on a closed fd", timerfd_settime(999, 0, &its, NULL));
    return 0;
}
