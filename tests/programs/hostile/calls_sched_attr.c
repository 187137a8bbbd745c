// sched_getattr and sched_setattr (they were ENOSYS, which chrt and some runtimes use): the
// program's attributes as sched_getscheduler and sched_getparam give them, the record's size
// rules (shorter, longer, too short), the error cases, a niceness set through sched_setattr
// as nice(0) and getpriority then see it, and SCHED_BATCH and SCHED_IDLE (what `chrt -b` and
// `chrt -i` ask) read back, in a forked child too. Compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t prio;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
    uint8_t past[16];
};

#define SHOW_WIDTH 30
#include "show.h"

static void get(const char *what, pid_t pid, unsigned size) {
    struct attr a;
    memset(&a, 0xee, sizeof a);
    long r = syscall(SYS_sched_getattr, pid, &a, size, 0);
    show(what, r);
    if (r == 0)
        printf("  size %u policy %u flags %lu nice %d prio %u deadline %lu period %lu util %u %u past %02x\n",
               a.size, a.policy, (unsigned long)a.flags, a.nice, a.prio, (unsigned long)a.deadline,
               (unsigned long)a.period, a.size > 48 ? a.util_min : 0, a.size > 48 ? a.util_max : 0, a.past[0]);
}

static long set(uint32_t size, uint32_t policy, uint64_t flags, int nice) {
    struct attr a;
    memset(&a, 0, sizeof a);
    a.size = size;
    a.policy = policy;
    a.flags = flags;
    a.nice = nice;
    long r = syscall(SYS_sched_setattr, 0, &a, 0);
    if (r < 0 && errno == E2BIG)
        printf("  E2BIG wrote size %u\n", a.size);
    return r;
}

int main(void) {
    struct sched_param p;
    show("sched_getscheduler", sched_getscheduler(0));
    show("sched_getparam", sched_getparam(0, &p));
    printf("  priority %d\n", p.sched_priority);
    get("sched_getattr(0, 56)", 0, 56);
    get("sched_getattr(getpid(), 72)", getpid(), 72);
    get("sched_getattr(gettid(), 48)", gettid(), 48);
    get("sched_getattr(0, 40)", 0, 40);
    // The time slice itself depends on the host's load: only that there is one.
    struct timespec ts = {-1, -1};
    int rr = sched_rr_get_interval(0, &ts);
    printf("sched_rr_get_interval(0): %d, %s\n", rr, rr == 0 && ts.tv_sec >= 0 && ts.tv_nsec >= 0 ? "a time" : "none");
    rr = sched_rr_get_interval(gettid(), &ts);
    printf("sched_rr_get_interval(gettid()): %d, %s\n", rr, rr == 0 && ts.tv_sec >= 0 ? "a time" : "none");
    show("sched_rr_get_interval(-1)", sched_rr_get_interval(-1, &ts));
    show("sched_rr_get_interval(0, bad)", sched_rr_get_interval(0, (struct timespec *)16));
    get("sched_getattr(0, 8192)", 0, 8192);
    get("sched_getattr(no such pid)", 999999, 56);
    show("sched_getattr(flags 1)", syscall(SYS_sched_getattr, 0, &p, 56, 1));
    show("sched_getattr(bad pointer)", syscall(SYS_sched_getattr, 0, (void *)8, 56, 0));
    show("sched_getattr(NULL)", syscall(SYS_sched_getattr, 0, NULL, 56, 0));
    show("sched_setattr(NULL)", syscall(SYS_sched_setattr, 0, NULL, 0));
    show("sched_setattr(flags 1)", syscall(SYS_sched_setattr, 0, &p, 1));
    show("sched_setattr(bad pointer)", syscall(SYS_sched_setattr, 0, (void *)8, 0));
    show("sched_setattr(size 20)", set(20, 0, 0, 0));
    show("sched_setattr(policy 4)", set(56, 4, 0, 0));
    show("sched_setattr(OTHER, nice 3)", set(56, 0, 0, 3));
    printf("  nice(0) %d getpriority %d\n", nice(0), getpriority(PRIO_PROCESS, 0));
    get("sched_getattr after", 0, 56);
    show("sched_setattr(size 0, nice 50)", set(0, 0, 0, 50));
    printf("  nice(0) %d\n", nice(0));
    show("sched_setattr(KEEP_PARAMS)", set(56, 0, 0x10, 5));
    printf("  nice(0) %d\n", nice(0));
    // The policy calls chrt makes.
    for (int pol = 0; pol <= 6; pol++) {
        errno = 0;
        int mx = sched_get_priority_max(pol), mn = sched_get_priority_min(pol);
        printf("priority range of %d: %d..%d %s\n", pol, mn, mx, errno ? strerror(errno) : "");
    }
    p.sched_priority = 0;
    show("sched_setscheduler(OTHER, 0)", sched_setscheduler(0, SCHED_OTHER, &p));
    show("sched_setparam(0)", sched_setparam(0, &p));
    p.sched_priority = 5;
    show("sched_setscheduler(OTHER, 5)", sched_setscheduler(0, SCHED_OTHER, &p));
    show("sched_setparam(5)", sched_setparam(0, &p));
    show("sched_setscheduler(policy 9)", sched_setscheduler(0, 9, &p));
    show("sched_setscheduler(NULL)", sched_setscheduler(0, SCHED_OTHER, NULL));
    show("sched_setscheduler(pid -1)", sched_setscheduler(-1, SCHED_OTHER, &p));
    show("sched_getscheduler after", sched_getscheduler(0));
    // A negative pid: EINVAL for the policy and its parameter, ESRCH (no such process) for
    // the CPU mask, as Linux answers.
    cpu_set_t mask;
    CPU_ZERO(&mask);
    CPU_SET(0, &mask);
    show("sched_getscheduler(-1)", sched_getscheduler(-1));
    show("sched_getparam(-1)", sched_getparam(-1, &p));
    show("sched_getparam(NULL)", syscall(SYS_sched_getparam, 0, NULL));
    show("sched_getaffinity(-1)", sched_getaffinity(-1, sizeof mask, &mask));
    show("sched_setaffinity(-1)", sched_setaffinity(-1, sizeof mask, &mask));
    // The policies for throughput and for idle time.
    p.sched_priority = 0;
    show("sched_setscheduler(BATCH, 0)", sched_setscheduler(0, SCHED_BATCH, &p));
    show("sched_getscheduler", sched_getscheduler(0));
    get("sched_getattr(BATCH)", 0, 56);
    pid_t c = fork();
    if (c == 0) {
        show("forked child: getscheduler", sched_getscheduler(0));
        _exit(0);
    }
    waitpid(c, NULL, 0);
    /* The child is gone now: no such process. */
    p.sched_priority = 0;
    show("sched_setscheduler(waited child)", sched_setscheduler(c, SCHED_OTHER, &p));
    show("sched_setparam(waited child)", sched_setparam(c, &p));
    /* A live child's policy, set by its parent (the host's call for another process). Its own
       view of a policy its parent set is not compared: HRT's kernel keeps its own (README). */
    int fds[2];
    if (pipe(fds) != 0)
        return 1;
    c = fork();
    if (c == 0) {
        char b;
        close(fds[1]);
        while (read(fds[0], &b, 1) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    close(fds[0]);
    p.sched_priority = 0;
    show("sched_setscheduler(child, IDLE)", sched_setscheduler(c, SCHED_IDLE, &p));
    show("sched_getscheduler(child)", sched_getscheduler(c));
    show("sched_setparam(child, 0)", sched_setparam(c, &p));
    p.sched_priority = 5;
    show("sched_setparam(child, 5)", sched_setparam(c, &p));
    show("sched_setscheduler(child, 9)", sched_setscheduler(c, 9, &p));
    show("sched_setscheduler(child, bad)", sched_setscheduler(c, SCHED_OTHER, (struct sched_param *)8));
    struct attr ca;
    memset(&ca, 0, sizeof ca);
    ca.size = 48;
    ca.nice = 4;
    show("sched_setattr(child, nice 4)", syscall(SYS_sched_setattr, c, &ca, 0));
    printf("  getpriority(child) %d\n", getpriority(PRIO_PROCESS, c));
    get("sched_getattr(child)", c, 48);
    show("sched_getparam(child)", sched_getparam(c, &p));
    printf("  priority %d\n", p.sched_priority);
    ca.size = 12;
    show("sched_setattr(child, size 12)", syscall(SYS_sched_setattr, c, &ca, 0));
    close(fds[1]);
    waitpid(c, NULL, 0);
    /* Another user's process: EPERM where Linux checks the permission (as root, a child that
       gives up its ids first). */
    if (geteuid() == 0) {
        fflush(stdout);
        c = fork();
        if (c == 0) {
            if (setgid(65534) != 0 || setuid(65534) != 0)
                _exit(1);
            p.sched_priority = 0;
            show("as nobody: sched_setparam(1)", sched_setparam(1, &p));
            show("as nobody: sched_setscheduler(1)", sched_setscheduler(1, SCHED_BATCH, &p));
            ca.size = 48;
            show("as nobody: sched_setattr(1)", syscall(SYS_sched_setattr, 1, &ca, 0));
            fflush(stdout);
            _exit(0);
        }
        int st;
        waitpid(c, &st, 0);
        printf("as nobody: child status %d\n", st);
    }
    /* Another process's policy with its reset-on-fork flag (the host's init has it). */
    show("sched_getscheduler(1)", sched_getscheduler(1));
    show("sched_setscheduler(IDLE, 0)", sched_setscheduler(0, SCHED_IDLE, &p));
    show("sched_getscheduler", sched_getscheduler(0));
    p.sched_priority = 1;
    show("sched_setscheduler(BATCH, 1)", sched_setscheduler(0, SCHED_BATCH, &p));
    show("sched_setattr(BATCH, nice 0)", set(56, SCHED_BATCH, 0, 0));
    show("sched_getscheduler", sched_getscheduler(0));
    show("sched_setattr(KEEP_POLICY)", set(56, SCHED_OTHER, 0x08, 0));
    show("sched_getscheduler", sched_getscheduler(0));
    p.sched_priority = 0;
    show("sched_setscheduler(OTHER, 0)", sched_setscheduler(0, SCHED_OTHER, &p));
    show("sched_getscheduler", sched_getscheduler(0));
    return 0;
}
