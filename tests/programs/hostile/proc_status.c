/* /proc/self/status, /proc/thread-self/status, /proc/self/task/N/status, /proc/self/stat and
 * /proc/self/statm as programs read them: the lines Linux has, in its order; Threads the number
 * of threads running; the signal sets of the main thread, of another thread, the process's
 * pending ones; VmRSS growing and shrinking with memory touched and given back, VmHWM keeping
 * the peak; stat's and statm's figures agreeing with status. Prints only what is the same on
 * every Linux run (no sizes, no pids). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[16384];

static const char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("cannot open %s\n", path);
        exit(1);
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* The value of `key:` in a status file, as text (static). */
static const char *field(const char *path, const char *key) {
    static char out[512];
    const char *s = slurp(path);
    size_t k = strlen(key);
    for (const char *l = s; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
        if (!strncmp(l, key, k) && l[k] == ':') {
            const char *v = l + k + 1;
            while (*v == '\t' || *v == ' ') v++;
            size_t n = strcspn(v, "\n");
            memcpy(out, v, n);
            out[n] = 0;
            return out;
        }
    }
    return "(none)";
}

static long kb(const char *path, const char *key) { return atol(field(path, key)); }

static unsigned long long hex(const char *path, const char *key) { return strtoull(field(path, key), 0, 16); }

/* Field n (1-based) of /proc/self/stat. */
static long long stat_field(int n) {
    const char *s = slurp("/proc/self/stat");
    const char *p = strrchr(s, ')') + 2;
    for (int i = 3; i < n; i++) p = strchr(p, ' ') + 1;
    return atoll(p);
}

static pthread_barrier_t started, done;
static volatile pid_t other_tid;

static void *thread(void *arg) {
    if (arg) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGWINCH);
        sigaddset(&s, SIGRTMIN + 5);
        pthread_sigmask(SIG_BLOCK, &s, 0);
        other_tid = syscall(SYS_gettid);
        printf("thread-self SigBlk: %016llx\n", hex("/proc/thread-self/status", "SigBlk"));
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)other_tid);
        printf("own task SigBlk: %016llx\n", hex(path, "SigBlk"));
        printf("thread-self Pid is the tid: %s\n", atol(field("/proc/thread-self/status", "Pid")) == other_tid ? "yes" : "no");
        printf("thread-self Tgid is the pid: %s\n", atol(field("/proc/thread-self/status", "Tgid")) == getpid() ? "yes" : "no");
    }
    pthread_barrier_wait(&started);
    pthread_barrier_wait(&done);
    return 0;
}

static void on_signal(int sig) { (void)sig; }

int main(void) {
    /* The lines, in order. */
    const char *s = slurp("/proc/self/status");
    printf("keys:");
    for (const char *l = s; *l; l = strchr(l, '\n') + 1) {
        printf(" %.*s", (int)strcspn(l, ":"), l);
        if (!strchr(l, '\n')) break;
    }
    printf("\n");
    printf("State: %s\n", field("/proc/self/status", "State"));
    printf("Pid is getpid: %s\n", atol(field("/proc/self/status", "Pid")) == getpid() ? "yes" : "no");
    printf("PPid is getppid: %s\n", atol(field("/proc/self/status", "PPid")) == getppid() ? "yes" : "no");

    /* Threads. */
    printf("Threads at start: %s\n", field("/proc/self/status", "Threads"));
    enum { N = 4 };
    pthread_t t[N];
    pthread_barrier_init(&started, 0, N + 1);
    pthread_barrier_init(&done, 0, N + 1);
    for (int i = 0; i < N; i++) pthread_create(&t[i], 0, thread, i == 0 ? (void *)1 : 0);
    pthread_barrier_wait(&started);
    printf("Threads with %d more: %s\n", N, field("/proc/self/status", "Threads"));
    printf("stat num_threads: %lld\n", stat_field(20));
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)other_tid);
    printf("other task SigBlk: %016llx\n", hex(path, "SigBlk"));
    printf("other task Pid is its tid: %s\n", atol(field(path, "Pid")) == other_tid ? "yes" : "no");
    pthread_barrier_wait(&done);
    for (int i = 0; i < N; i++) pthread_join(t[i], 0);
    /* Linux wakes pthread_join (it clears the thread's tid) before it stops counting the
     * thread, so the count may lag for a moment natively: wait (up to 10 s) for it. */
    for (int tries = 0; tries < 10000 && atol(field("/proc/self/status", "Threads")) != 1; tries++)
        usleep(1000);
    printf("Threads after the joins: %s\n", field("/proc/self/status", "Threads"));

    /* Signal sets of the process and the main thread. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGUSR2);
    sigaddset(&set, SIGRTMIN + 3);
    sigprocmask(SIG_BLOCK, &set, 0);
    signal(SIGHUP, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, 0);
    sigaction(SIGALRM, &sa, 0);
    sigaction(SIGRTMIN + 7, &sa, 0);
    kill(getpid(), SIGUSR1);               /* the process's */
    syscall(SYS_tgkill, getpid(), getpid(), SIGUSR2); /* the main thread's */
    union sigval v = {.sival_int = 1};
    sigqueue(getpid(), SIGRTMIN + 3, v);
    sigqueue(getpid(), SIGRTMIN + 3, v);
    printf("SigPnd: %016llx\n", hex("/proc/self/status", "SigPnd"));
    printf("ShdPnd: %016llx\n", hex("/proc/self/status", "ShdPnd"));
    printf("SigBlk: %016llx\n", hex("/proc/self/status", "SigBlk"));
    printf("SigIgn: %016llx\n", hex("/proc/self/status", "SigIgn"));
    printf("SigCgt: %016llx\n", hex("/proc/self/status", "SigCgt"));
    printf("SigQ pending: %ld\n", atol(field("/proc/self/status", "SigQ")) >= 4 ? 4L : atol(field("/proc/self/status", "SigQ")));
    printf("stat blocked: %llx, ignored: %llx, caught: %llx\n", stat_field(32), stat_field(33), stat_field(34));
    signal(SIGUSR1, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    signal(SIGRTMIN + 3, SIG_IGN);
    printf("after ignoring them, ShdPnd %016llx SigPnd %016llx\n", hex("/proc/self/status", "ShdPnd"),
           hex("/proc/self/status", "SigPnd"));

    /* CPUs and memory nodes. */
    cpu_set_t cpus;
    sched_getaffinity(0, sizeof cpus, &cpus);
    char list[64];
    int n = CPU_COUNT(&cpus);
    snprintf(list, sizeof list, n == 1 ? "0" : "0-%d", n - 1);
    printf("Cpus_allowed_list is the affinity's: %s\n", !strcmp(field("/proc/self/status", "Cpus_allowed_list"), list) ? "yes" : "no");
    printf("Mems_allowed_list: %s\n", field("/proc/self/status", "Mems_allowed_list"));

    /* Memory: 64 MiB touched, then given back. */
    const long MIB = 1024;
    long rss0 = kb("/proc/self/status", "VmRSS");
    long size0 = kb("/proc/self/status", "VmSize");
    size_t len = 64 << 20;
    char *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(p, 1, len);
    long rss1 = kb("/proc/self/status", "VmRSS");
    long size1 = kb("/proc/self/status", "VmSize");
    long hwm1 = kb("/proc/self/status", "VmHWM");
    long statm_size, statm_rss;
    sscanf(slurp("/proc/self/statm"), "%ld %ld", &statm_size, &statm_rss);
    long long vsize = stat_field(23), rss_pages = stat_field(24);
    printf("VmRSS grew by 64-72 MiB: %s\n", rss1 - rss0 >= 64 * MIB && rss1 - rss0 <= 72 * MIB ? "yes" : "no");
    printf("VmSize grew by 64 MiB or more: %s\n", size1 - size0 >= 64 * MIB ? "yes" : "no");
    printf("VmHWM >= VmRSS: %s\n", hwm1 >= rss1 ? "yes" : "no");
    printf("VmSize >= VmRSS: %s\n", size1 >= rss1 ? "yes" : "no");
    printf("stat vsize is VmSize: %s\n", vsize / 1024 == size1 ? "yes" : "no");
    printf("stat rss is VmRSS (within 1 MiB): %s\n", labs(rss_pages * 4 - rss1) <= MIB ? "yes" : "no");
    printf("statm size is VmSize: %s\n", statm_size * 4 == size1 ? "yes" : "no");
    printf("statm resident is VmRSS (within 1 MiB): %s\n", labs(statm_rss * 4 - rss1) <= MIB ? "yes" : "no");
    munmap(p, len);
    long rss2 = kb("/proc/self/status", "VmRSS");
    long hwm2 = kb("/proc/self/status", "VmHWM");
    printf("VmRSS fell by 64 MiB or more: %s\n", rss1 - rss2 >= 64 * MIB - 512 ? "yes" : "no");
    /* Linux folds its per-CPU counters into VmHWM lazily: within 1 MiB. */
    printf("VmHWM kept the peak (within 1 MiB): %s\n", hwm2 + MIB >= rss1 ? "yes" : "no");
    if (getenv("SHOW")) fprintf(stderr, "rss %ld %ld %ld hwm %ld %ld size %ld %ld\n", rss0, rss1, rss2, hwm1, hwm2, size0, size1);
    printf("VmPeak >= VmSize at the peak: %s\n", kb("/proc/self/status", "VmPeak") >= size1 ? "yes" : "no");

    /* Peaks reached and left without a read between: a mapping, and the break. */
    long peak0 = kb("/proc/self/status", "VmPeak"), size3 = kb("/proc/self/status", "VmSize");
    size_t big = (size_t)(peak0 - size3 + 32 * MIB) * 1024;
    char *q = mmap(0, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(q, big);
    long peak1 = kb("/proc/self/status", "VmPeak");
    printf("VmPeak caught an unread mapping's peak: %s\n", peak1 >= size3 + (long)(big / 1024) ? "yes" : "no");
    long size4 = kb("/proc/self/status", "VmSize");
    size_t grow = (size_t)(peak1 - size4 + 16 * MIB) * 1024;
    if (sbrk(grow) != (void *)-1) {
        sbrk(-(long)grow);
        printf("VmPeak caught an unread break's peak: %s\n",
               kb("/proc/self/status", "VmPeak") >= size4 + (long)(grow / 1024) ? "yes" : "no");
    } else {
        printf("VmPeak caught an unread break's peak: yes\n");
    }

    /* A forked child: one thread, its mask inherited, nothing pending, some memory. */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, 0);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, 0);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        printf("child Threads: %s\n", field("/proc/self/status", "Threads"));
        printf("child SigBlk: %016llx\n", hex("/proc/self/status", "SigBlk"));
        printf("child SigPnd %016llx ShdPnd %016llx\n", hex("/proc/self/status", "SigPnd"),
               hex("/proc/self/status", "ShdPnd"));
        printf("child Pid is its getpid: %s\n", atol(field("/proc/self/status", "Pid")) == getpid() ? "yes" : "no");
        printf("child VmRSS > 0: %s\n", kb("/proc/self/status", "VmRSS") > 0 ? "yes" : "no");
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(child, &st, 0);
    printf("child exited: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}
