/* prlimit64 of another process: the parent's limits read (ESRCH under hrt before), a forked
 * child's lowered by the parent and read back (what the child itself then sees is not compared:
 * a child under hrt keeps its limits in its own kernel, which the host's call does not reach), a
 * pid that does not exist (ESRCH), bad pointers (EFAULT), a bad resource (EINVAL); the
 * program's own pid and a live thread's tid answer its own limits, an ended thread's ESRCH. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static long pl(pid_t pid, int res, const struct rlimit *new, struct rlimit *old) {
    long r = syscall(SYS_prlimit64, pid, res, new, old);
    return r < 0 ? -errno : r;
}

static int same(const struct rlimit *a, const struct rlimit *b) {
    return a->rlim_cur == b->rlim_cur && a->rlim_max == b->rlim_max;
}

static volatile pid_t tid;
static long by_tid;
static struct rlimit tid_got;
static void *thread(void *arg) {
    (void)arg;
    tid = syscall(SYS_gettid);
    by_tid = pl(tid, RLIMIT_STACK, 0, &tid_got);
    return 0;
}

int main(void) {
    struct rlimit mine, got;
    /* The parent's (the test harness's or a shell): as its own /proc/<pid>/limits reads. */
    getrlimit(RLIMIT_NOFILE, &mine);
    long r = pl(getppid(), RLIMIT_NOFILE, 0, &got);
    printf("parent's NOFILE: %ld, is ours (inherited): %s\n", r, r == 0 && same(&got, &mine) ? "yes" : "no");
    r = pl(getppid(), RLIMIT_STACK, 0, &got);
    printf("parent's STACK: %ld\n", r);

    /* A child that waits: the parent lowers its RLIMIT_CORE soft limit, both read it. */
    int to_child[2], to_parent[2];
    pipe(to_child);
    pipe(to_parent);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        char c;
        read(to_child[0], &c, 1);
        write(to_parent[1], "x", 1);
        read(to_child[0], &c, 1);
        _exit(0);
    }
    struct rlimit core = {.rlim_cur = 4096, .rlim_max = RLIM_INFINITY};
    struct rlimit before;
    r = pl(child, RLIMIT_CORE, 0, &before);
    printf("child's CORE read: %ld\n", r);
    getrlimit(RLIMIT_CORE, &got);
    core.rlim_max = got.rlim_max;
    r = pl(child, RLIMIT_CORE, &core, &got);
    printf("child's CORE set to 4096: %ld, old was ours: %s\n", r, same(&got, &before) ? "yes" : "no");
    r = pl(child, RLIMIT_CORE, 0, &got);
    printf("child's CORE read back: %ld, %llu\n", r, (unsigned long long)got.rlim_cur);
    write(to_child[1], "x", 1);
    char c;
    read(to_parent[0], &c, 1);
    write(to_child[1], "x", 1);
    int status;
    waitpid(child, &status, 0);

    /* Errors. */
    printf("no such pid: %s\n", strerror(-pl(0x3ffffff0, RLIMIT_NOFILE, 0, &got)));
    printf("bad old pointer: %s\n", strerror(-pl(getppid(), RLIMIT_NOFILE, 0, (struct rlimit *)8)));
    printf("bad new pointer: %s\n", strerror(-pl(getppid(), RLIMIT_NOFILE, (struct rlimit *)8, 0)));
    printf("bad resource: %s\n", strerror(-pl(getppid(), 99, 0, &got)));

    /* Our own pid and a thread's tid: our limits. */
    struct rlimit st = {.rlim_cur = 4 << 20, .rlim_max = RLIM_INFINITY};
    getrlimit(RLIMIT_STACK, &got);
    st.rlim_max = got.rlim_max;
    pl(0, RLIMIT_STACK, &st, 0);
    pthread_t t;
    pthread_create(&t, 0, thread, 0);
    pthread_join(t, 0);
    r = pl(getpid(), RLIMIT_STACK, 0, &got);
    printf("own pid: %ld, %llu\n", r, (unsigned long long)got.rlim_cur);
    printf("a live thread's tid: %ld, %llu\n", by_tid, (unsigned long long)tid_got.rlim_cur);
    /* A joined thread's tid is no longer a task: ESRCH, as on Linux. pthread_join returns
     * once the thread cleared its tid, which Linux does a moment before the task is gone: a
     * loaded host still answered for it (1 run of a full test suite), so ask a few times. */
    r = pl(tid, RLIMIT_STACK, 0, &got);
    for (int i = 0; i < 10000 && r == 0; i++) {
        usleep(1000);
        r = pl(tid, RLIMIT_STACK, 0, &got);
    }
    printf("an ended thread's tid: %s\n", strerror(-r));
    return 0;
}
