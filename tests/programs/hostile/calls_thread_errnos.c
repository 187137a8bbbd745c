// Thread calls with arguments Linux refuses, and other threads' state: futex's realtime clock
// only for the absolute waits, a requeue's negative counts, tgkill's int ids, clone's flag
// combinations, another thread's robust list, pids no process has, and a thread's
// /proc/self/task directory while it lives and after.
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#define SHOW_WIDTH 44
#include "show.h"

static volatile int tid, stop;
static struct robust_list_head head;

static void *worker(void *arg) {
    (void)arg;
    syscall(SYS_set_robust_list, &head, sizeof head);
    tid = gettid();
    while (!stop)
        usleep(1000);
    return NULL;
}

static void look(const char *what, const char *fmt) {
    char path[64];
    snprintf(path, sizeof path, fmt, tid);
    struct stat st;
    show(what, stat(path, &st));
}

int main(void) {
    uint32_t word = 0, other = 0;
    struct timespec tenth = {0, 100000000};
    show("futex WAIT|CLOCK_REALTIME", syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE | FUTEX_CLOCK_REALTIME, 0, &tenth, 0, 0));
    show("futex WAKE|CLOCK_REALTIME", syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE | FUTEX_CLOCK_REALTIME, 1, 0, 0, 0));
    show("futex REQUEUE|CLOCK_REALTIME", syscall(SYS_futex, &word, FUTEX_REQUEUE_PRIVATE | FUTEX_CLOCK_REALTIME, 1, 1, &other, 0));
    show("futex CMP_REQUEUE, nr_wake -1", syscall(SYS_futex, &word, FUTEX_CMP_REQUEUE_PRIVATE, -1, (void *)1L, &other, 0));
    show("futex CMP_REQUEUE, nr_requeue -1", syscall(SYS_futex, &word, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)-1L, &other, 0));
    show("tgkill(pid, -1, 0)", syscall(SYS_tgkill, getpid(), -1, 0));
    show("tkill(-1, 0)", syscall(SYS_tkill, -1, 0));
    show("clone THREAD without SIGHAND", syscall(SYS_clone, CLONE_THREAD | CLONE_VM, 0, 0, 0, 0));
    show("clone SIGHAND without VM", syscall(SYS_clone, CLONE_SIGHAND, 0, 0, 0, 0));
    show("clone NEWNS with FS", syscall(SYS_clone, CLONE_NEWNS | CLONE_FS, 0, 0, 0, 0));
    show("unshare(0)", unshare(0));
    show("unshare FILES|FS|SYSVSEM, one thread", unshare(CLONE_FILES | CLONE_FS | CLONE_SYSVSEM));

    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    while (!tid)
        usleep(1000);
    struct robust_list_head *got = NULL;
    size_t len = 0;
    show("get_robust_list of another thread", syscall(SYS_get_robust_list, tid, &got, &len));
    printf("  it is that thread's: %d, size %zu\n", got == &head, len);
    show("get_robust_list of no process", syscall(SYS_get_robust_list, 99999999, &got, &len));
    cpu_set_t set;
    show("sched_getaffinity of no process", sched_getaffinity(99999999, sizeof set, &set));
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    show("sched_setaffinity of no process", sched_setaffinity(99999999, sizeof set, &set));
    look("stat task/TID, alive", "/proc/self/task/%d");
    look("stat task/TID/comm, alive", "/proc/self/task/%d/comm");
    look("stat /proc/TID, alive", "/proc/%d");
    look("stat /proc/TID/status, alive", "/proc/%d/status");
    show("unshare VM, two threads", unshare(CLONE_VM));
    stop = 1;
    pthread_join(t, NULL);
    /* pthread_join returns once the thread cleared its tid, which Linux does a moment before
     * the task is gone (a busy host can stretch that moment): wait for the task to go. */
    char gone[64];
    snprintf(gone, sizeof gone, "/proc/self/task/%d", (int)tid);
    struct stat sb;
    for (int i = 0; i < 10000 && stat(gone, &sb) == 0; i++)
        usleep(1000);
    look("stat task/TID, ended", "/proc/self/task/%d");
    look("stat task/TID/comm, ended", "/proc/self/task/%d/comm");
    look("stat /proc/TID, ended", "/proc/%d");
    printf("thread errnos: done\n");
    return 0;
}
