/* Process-level micro benchmarks (pthreads + libc) for HRT's `hrt bench`: the same static
 * program runs natively (the Linux figure) and under `hrt run` (HRT's figure). Results are
 * RESULT lines (bench/common/bench.h); everything else starts with '#'.
 *
 * Usage: micro [--quick] [--only NAME[,NAME...]]
 *   NAME is a test (thread_create, thread_create_seq, create_join, cond_wakeup,
 *   spin_uncontended, spin_contended, barrier, sleep_10us, getpid, write_devnull, mmap_touch_64m,
 *   brk_pattern, munmap, fwq, forkjoin, buffer, noise) or one of its result names (forkjoin.2).
 *
 * Each test has a wanted repetition count (full / --quick). When a calibration repetition
 * shows that the wanted count would take longer than the per-result time budget (system calls
 * are much slower in some environments), the count is lowered, a '#' line says so, and n=
 * reports the count used. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/bench.h"

#define STACK_SIZE (256 * 1024) /* every created thread: 256 threads stay well within memory */
#define WORK_ITERS 16384        /* fwq/noise work quantum: ~65 K cycles of dependent ALU work */
#define TINY_WORK_ITERS 256     /* forkjoin's per-thread work */
#define MAX_SEQ 256

static int quick, ncpu;
static double budget_s;       /* time budget of one result's measured repetitions */
static double syscall_cost_s; /* one getpid, measured at start */
static double tsc_hz;
static pthread_attr_t thread_attr;
static int devnull = -1;
static volatile uint64_t sink;

/* ---------------------------------------------------------------- helpers */

__attribute__((noinline)) static uint64_t work(uint64_t x, int iters) {
    for (int i = 0; i < iters; i++)
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

static atomic_int pin_failures;

static int pin_self(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu % ncpu, &set);
    return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* Pins the caller; counts a failure when that fails or does not take effect (the thread is
 * not on that CPU afterwards: HRT accepts affinity but keeps threads where it placed them). */
static void pin_or_count(int cpu) {
    if (pin_self(cpu) != 0 || sched_getcpu() != cpu % ncpu)
        atomic_fetch_add(&pin_failures, 1);
}

/* Says once per test whether pinning failed (the test then ran unpinned). */
static void report_pinning(const char *name) {
    int f = atomic_exchange(&pin_failures, 0);
    if (f)
        printf("# %s: pinning to a CPU failed or did not take effect for %d thread(s); they ran "
               "unpinned\n",
               name, f);
}

static void spawn(pthread_t *th, void *(*fn)(void *), void *arg) {
    int e = pthread_create(th, &thread_attr, fn, arg);
    if (e) {
        fprintf(stderr, "pthread_create: %s\n", strerror(e));
        exit(1);
    }
}

/* The harness's own waits spin (no system calls to disturb what is measured), and after
 * ~50 us also yield the CPU: where threads are not preempted (HRT by default), the thread
 * waited for may be queued behind the waiter on its CPU, not yet pinned elsewhere. */
static uint64_t yield_after; /* cycles */

#define WAIT_UNTIL(cond)                                                                      \
    do {                                                                                      \
        uint64_t w0_ = bench_tsc();                                                           \
        while (!(cond)) {                                                                     \
            if (bench_tsc() - w0_ > yield_after)                                              \
                sched_yield();                                                                \
            else                                                                              \
                bench_pause();                                                                \
        }                                                                                     \
    } while (0)

/* A spinning barrier for the harness itself. Only its first episode (members may not have
 * run yet), an oversubscribed team and a team whose pinning failed may yield: a yield inside
 * a timed sample would let the other members run their share while the yielding one is away
 * (a system call is ~0.5 ms under HRT on PVM). */
struct sbar {
    atomic_int count, gen;
    int n;
};

static void sbar_wait(struct sbar *b) {
    int g = atomic_load(&b->gen);
    if (atomic_fetch_add(&b->count, 1) == b->n - 1) {
        atomic_store(&b->count, 0);
        atomic_fetch_add(&b->gen, 1);
    } else if (g == 0 || b->n > ncpu || atomic_load(&pin_failures)) {
        WAIT_UNTIL(atomic_load(&b->gen) != g);
    } else {
        while (atomic_load(&b->gen) == g)
            bench_pause();
    }
}

/* Runs fn(idx, ctx) on k threads, thread idx pinned to CPU idx % ncpu, and joins them. */
struct member {
    int idx;
    void (*fn)(int idx, void *ctx);
    void *ctx;
};

static void *member_main(void *p) {
    struct member *m = p;
    pin_or_count(m->idx);
    m->fn(m->idx, m->ctx);
    return NULL;
}

static void run_team(int k, void (*fn)(int, void *), void *ctx) {
    pthread_t *th = bench_alloc(sizeof(pthread_t) * k);
    struct member *m = bench_alloc(sizeof(struct member) * k);
    for (int i = 0; i < k; i++) {
        m[i] = (struct member){i, fn, ctx};
        spawn(&th[i], member_main, &m[i]);
    }
    for (int i = 0; i < k; i++)
        pthread_join(th[i], NULL);
    free(th);
    free(m);
}

/* Repetitions to run: the wanted count, lowered to fit the budget given one repetition's cost. */
static long plan_reps(const char *name, long want, long min, double rep_s) {
    if (rep_s * (double)want <= budget_s)
        return want;
    long n = (long)(budget_s / rep_s);
    if (n < min)
        n = min;
    if (n >= want)
        return want;
    printf("# %s: one repetition takes %.3f ms; repetitions lowered from %ld to %ld (budget "
           "%.1f s)\n",
           name, rep_s * 1e3, want, n, budget_s);
    return n;
}

static const char *threads_key(int k) {
    static char buf[32];
    snprintf(buf, sizeof buf, "threads=%d", k);
    return buf;
}

/* One repetition: returns its value and may set *aux (a second value, e.g. page faults). */
typedef double (*rep_fn)(void *ctx, double *aux);

/* Timed warm-up repetitions (the second sets the cost, unless the first was already slow),
 * then the planned repetitions; prints `name` and, when aux_name is given, a second result of
 * the aux values (unit=count). */
static void sampled(const char *name, const char *unit, long want_full, long want_quick,
                    long min, rep_fn fn, void *ctx, const char *aux_name, int threads) {
    double aux_dummy, t0 = bench_now();
    fn(ctx, &aux_dummy);
    double cost = bench_now() - t0;
    if (cost < budget_s / 10) {
        t0 = bench_now();
        fn(ctx, &aux_dummy);
        cost = bench_now() - t0;
    }
    long n = plan_reps(name, quick ? want_quick : want_full, min, cost);
    double *v = bench_alloc(sizeof(double) * n), *aux = bench_alloc(sizeof(double) * n);
    for (long i = 0; i < n; i++)
        v[i] = fn(ctx, &aux[i]);
    bench_result("micro", name, unit, v, n, threads_key(threads));
    if (aux_name)
        bench_result("micro", aux_name, "count", aux, n, threads_key(threads));
    free(v);
    free(aux);
}

static long minflt(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_minflt;
}

/* ---------------------------------------------------------------- threads */

static void *empty_thread(void *arg) { return arg; }

static double rep_thread_create(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    pthread_t th;
    uint64_t t0 = bench_tsc();
    spawn(&th, empty_thread, NULL);
    uint64_t t1 = bench_tsc();
    pthread_join(th, NULL);
    return (double)(t1 - t0);
}

static double rep_thread_create_seq(void *ctx, double *aux) {
    (void)aux;
    int n = *(int *)ctx;
    static pthread_t th[MAX_SEQ];
    uint64_t t0 = bench_tsc();
    for (int i = 0; i < n; i++)
        spawn(&th[i], empty_thread, NULL);
    uint64_t t1 = bench_tsc();
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    return (double)(t1 - t0);
}

static double rep_create_join(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    pthread_t th;
    uint64_t t0 = bench_tsc();
    spawn(&th, empty_thread, NULL);
    pthread_join(th, NULL);
    return (double)(bench_tsc() - t0);
}

static void *tiny_thread(void *arg) {
    sink = work((uint64_t)(uintptr_t)arg, TINY_WORK_ITERS);
    return NULL;
}

static double rep_forkjoin(void *ctx, double *aux) {
    (void)aux;
    int k = *(int *)ctx;
    pthread_t th[MAX_SEQ];
    uint64_t t0 = bench_tsc();
    for (int i = 0; i < k; i++)
        spawn(&th[i], tiny_thread, (void *)(uintptr_t)i);
    for (int i = 0; i < k; i++)
        pthread_join(th[i], NULL);
    return (double)(bench_tsc() - t0);
}

static void test_thread_create(void) {
    sampled("thread_create", "cycles", 1000, 200, 50, rep_thread_create, NULL, NULL, 1);
}

static void test_thread_create_seq(void) {
    for (int n = 1; n <= MAX_SEQ; n *= 2) {
        char name[48];
        snprintf(name, sizeof name, "thread_create_seq.%d", n);
        sampled(name, "cycles", 50, 10, 3, rep_thread_create_seq, &n, NULL, 1);
    }
}

static void test_create_join(void) {
    sampled("create_join", "cycles", 1000, 200, 50, rep_create_join, NULL, NULL, 1);
}

static void test_forkjoin(void) {
    for (int k = 1; k <= ncpu && k <= MAX_SEQ; k++) {
        char name[32];
        snprintf(name, sizeof name, "forkjoin.%d", k);
        sampled(name, "cycles", 1000, 200, 20, rep_forkjoin, &k, NULL, k);
    }
}

/* ---------------------------------------------------------------- cond_wakeup */

static struct {
    pthread_mutex_t m;
    pthread_cond_t c;
    atomic_long ready; /* round number + 1 the waiter is (about to be) waiting in */
    int go;
    long rounds;
    uint64_t settle; /* cycles the signaller waits so the waiter is asleep, not just waiting */
    uint64_t *wake, *sig;
} cw = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, NULL, NULL};

/* Member 1 waits (CPU 1); member 0 signals (CPU 0): once the waiter has published its round
 * and released the mutex inside pthread_cond_wait, the signaller lets it settle into its sleep,
 * takes the TSC and signals. Latency = the waiter's TSC on return - the signaller's TSC. */
static void cond_member(int idx, void *ctx) {
    (void)ctx;
    for (long r = 0; r < cw.rounds; r++) {
        if (idx == 1) {
            pthread_mutex_lock(&cw.m);
            atomic_store(&cw.ready, r + 1);
            while (!cw.go)
                pthread_cond_wait(&cw.c, &cw.m);
            cw.wake[r] = bench_tsc();
            cw.go = 0;
            pthread_mutex_unlock(&cw.m);
        } else {
            WAIT_UNTIL(atomic_load(&cw.ready) == r + 1);
            pthread_mutex_lock(&cw.m); /* held by the waiter until pthread_cond_wait */
            cw.go = 1;
            pthread_mutex_unlock(&cw.m);
            uint64_t s0 = bench_tsc();
            while (bench_tsc() - s0 < cw.settle)
                bench_pause();
            cw.sig[r] = bench_tsc();
            pthread_cond_signal(&cw.c);
        }
    }
}

static void test_cond_wakeup(void) {
    if (ncpu < 2)
        printf("# cond_wakeup: one CPU: signaller and waiter share it\n");
    double settle_s = 10 * syscall_cost_s > 20e-6 ? 10 * syscall_cost_s : 20e-6;
    long n = plan_reps("cond_wakeup", quick ? 200 : 1000, 20, settle_s + 40 * syscall_cost_s);
    printf("# cond_wakeup: the signaller waits %.1f us before each signal\n", settle_s * 1e6);
    cw.rounds = n + 1; /* round 0 is a warm-up */
    cw.settle = (uint64_t)(settle_s * tsc_hz);
    atomic_store(&cw.ready, 0);
    cw.wake = bench_alloc(sizeof(uint64_t) * cw.rounds);
    cw.sig = bench_alloc(sizeof(uint64_t) * cw.rounds);
    run_team(2, cond_member, NULL);
    report_pinning("cond_wakeup");
    double *v = bench_alloc(sizeof(double) * n);
    for (long r = 0; r < n; r++)
        v[r] = (double)(int64_t)(cw.wake[r + 1] - cw.sig[r + 1]);
    bench_result("micro", "cond_wakeup", "cycles", v, n, threads_key(2));
    free(v);
    free(cw.wake);
    free(cw.sig);
}

/* ---------------------------------------------------------------- short sleeps */

/* usleep(10) on CPU 0, timed in cycles: alone, then with a thread spinning on the same CPU
 * (a runtime's polling wait beside a thread that sleeps briefly, e.g. a pthread that
 * fulfils OpenMP events). Linux runs the woken sleeper at once; a kernel that leaves it
 * behind the spinner until a time slice ends makes every sleep that long. Then usleep(1000)
 * among nine spinners, and beside a thread that computes (also a 1 ms timerfd read). */
#define SLEEP_US 10
static atomic_int sleep_spin_stop, sleep_spinning;

static void *sleep_spinner(void *p) {
    (void)p;
    pin_or_count(0);
    atomic_store(&sleep_spinning, 1);
    while (!atomic_load_explicit(&sleep_spin_stop, memory_order_relaxed))
        __builtin_ia32_pause();
    return NULL;
}

static double rep_sleep(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    uint64_t t0 = bench_tsc();
    usleep(SLEEP_US);
    return (double)(bench_tsc() - t0);
}

#define SLEEP_CROWD 8

static double rep_sleep_1ms(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    uint64_t t0 = bench_tsc();
    usleep(1000);
    return (double)(bench_tsc() - t0);
}

/* A thread that computes (no PAUSE, no system calls) on the sleeper's CPU: the sleeper's
 * wake-up must take the CPU from it, which a look for spinning cannot decide. */
static atomic_int sleep_compute_stop;
static volatile double sleep_compute_sink;

static void *sleep_computer(void *p) {
    (void)p;
    pin_or_count(0);
    double x = 1;
    while (!atomic_load_explicit(&sleep_compute_stop, memory_order_relaxed)) {
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 1e-9;
        sleep_compute_sink = x;
    }
    return NULL;
}

/* A blocking read of a timerfd set to expire in 1 ms (under hrt a forwarded call the host
 * answers: its answer comes as an interrupt), beside the computing thread: the reader must
 * take the CPU from it once woken, as Linux's woken thread does. */
static int sleep_timerfd = -1;

static double rep_timerfd_1ms(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    struct itimerspec in_1ms = {{0, 0}, {0, 1000000}};
    uint64_t expirations, t0 = bench_tsc();
    if (timerfd_settime(sleep_timerfd, 0, &in_1ms, NULL) != 0 ||
        read(sleep_timerfd, &expirations, sizeof expirations) != sizeof expirations) {
        perror("timerfd");
        exit(1);
    }
    return (double)(bench_tsc() - t0);
}

static void test_sleep(void) {
    pthread_t th;
    cpu_set_t old;
    pthread_getaffinity_np(pthread_self(), sizeof old, &old);
    pin_or_count(0);
    sampled("sleep_10us", "cycles", 1000, 200, 50, rep_sleep, NULL, NULL, 1);
    atomic_store(&sleep_spin_stop, 0);
    atomic_store(&sleep_spinning, 0);
    spawn(&th, sleep_spinner, NULL);
    while (!atomic_load(&sleep_spinning))
        usleep(SLEEP_US);
    sampled("sleep_10us.beside_spinner", "cycles", 1000, 200, 50, rep_sleep, NULL, NULL, 2);
    /* Eight more spinners: a sleeper that waits behind every spinner's time slice is late by
     * all of them (Linux lets a thread that slept run before the ones that kept the CPU). */
    pthread_t more[SLEEP_CROWD];
    for (int i = 0; i < SLEEP_CROWD; i++)
        spawn(&more[i], sleep_spinner, NULL);
    sampled("sleep_1ms.among_9_spinners", "cycles", 100, 30, 10, rep_sleep_1ms, NULL, NULL, SLEEP_CROWD + 2);
    atomic_store(&sleep_spin_stop, 1);
    for (int i = 0; i < SLEEP_CROWD; i++)
        pthread_join(more[i], NULL);
    pthread_join(th, NULL);
    atomic_store(&sleep_compute_stop, 0);
    spawn(&th, sleep_computer, NULL);
    sampled("sleep_1ms.beside_computer", "cycles", 100, 30, 10, rep_sleep_1ms, NULL, NULL, 2);
    sleep_timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    sampled("timerfd_1ms.beside_computer", "cycles", 100, 30, 10, rep_timerfd_1ms, NULL, NULL, 2);
    close(sleep_timerfd);
    atomic_store(&sleep_compute_stop, 1);
    pthread_join(th, NULL);
    pthread_setaffinity_np(pthread_self(), sizeof old, &old);
    report_pinning("sleep_10us");
}

/* ---------------------------------------------------------------- spin locks, barrier */

#define SPIN_BATCH 1000
static pthread_spinlock_t spin;
static long spin_shared;

static double rep_spin_uncontended(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    uint64_t t0 = bench_tsc();
    for (int i = 0; i < SPIN_BATCH; i++) {
        pthread_spin_lock(&spin);
        pthread_spin_unlock(&spin);
    }
    return (double)(bench_tsc() - t0) / SPIN_BATCH;
}

static void test_spin_uncontended(void) {
    sampled("spin_uncontended", "cycles", 1000, 200, 50, rep_spin_uncontended, NULL, NULL, 1);
}

/* A team measuring samples of something all members take part in: member 0 times it. */
struct team_run {
    struct sbar bar;
    long samples;
    double *v;
};

static void spin_member(int idx, void *ctx) {
    struct team_run *t = ctx;
    for (long s = 0; s < t->samples; s++) {
        sbar_wait(&t->bar);
        uint64_t t0 = bench_tsc();
        for (int i = 0; i < SPIN_BATCH; i++) {
            pthread_spin_lock(&spin);
            spin_shared++;
            pthread_spin_unlock(&spin);
        }
        sbar_wait(&t->bar);
        if (idx == 0)
            t->v[s] = (double)(bench_tsc() - t0) / ((double)SPIN_BATCH * ncpu);
    }
}

static void test_spin_contended(void) {
    struct team_run t = {.bar = {.n = ncpu}, .samples = quick ? 200 : 1000};
    t.v = bench_alloc(sizeof(double) * t.samples);
    run_team(ncpu, spin_member, &t);
    report_pinning("spin_contended");
    bench_result("micro", "spin_contended", "cycles", t.v, t.samples, threads_key(ncpu));
    free(t.v);
}

/* pthread_barrier_wait: member 0 times the interval between its successive returns (one
 * barrier episode each). The first 10 episodes calibrate; the count is published through the
 * barrier itself. */
static pthread_barrier_t pbar;

static void barrier_member(int idx, void *ctx) {
    struct team_run *t = ctx;
    double t0 = bench_now();
    for (int i = 0; i < 10; i++)
        pthread_barrier_wait(&pbar);
    if (idx == 0)
        t->samples = plan_reps("barrier", quick ? 200 : 1000, 20, (bench_now() - t0) / 10);
    pthread_barrier_wait(&pbar);
    uint64_t prev = bench_tsc();
    for (long s = 0; s < t->samples; s++) {
        pthread_barrier_wait(&pbar);
        if (idx == 0) {
            uint64_t now = bench_tsc();
            t->v[s] = (double)(now - prev);
            prev = now;
        }
    }
}

static void test_barrier(void) {
    long want = quick ? 200 : 1000;
    struct team_run t = {.samples = want};
    t.v = bench_alloc(sizeof(double) * want);
    pthread_barrier_init(&pbar, NULL, ncpu);
    run_team(ncpu, barrier_member, &t);
    pthread_barrier_destroy(&pbar);
    report_pinning("barrier");
    bench_result("micro", "barrier", "cycles", t.v, t.samples, threads_key(ncpu));
    free(t.v);
}

/* ---------------------------------------------------------------- system calls, memory */

/* The system-call rows time CALL_BATCH calls back to back and report the cycles of one: the
 * fenced TSC reads around a sample cost ~50-70 cycles themselves, on both sides, which a
 * single call timed alone carried (HRT's rewritten getpid read 73-98 cycles that way, where a
 * loop of a million calls takes 19-28 per call). */
#define CALL_BATCH 16

static double rep_getpid(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    uint64_t t0 = bench_tsc();
    for (int i = 0; i < CALL_BATCH; i++)
        syscall(SYS_getpid);
    return (double)(bench_tsc() - t0) / CALL_BATCH;
}

static double rep_write_devnull(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    uint64_t t0 = bench_tsc();
    if (write(devnull, "x", 1) != 1) {
        perror("write /dev/null");
        exit(1);
    }
    return (double)(bench_tsc() - t0);
}

/* The C library's own wrapper (`mov $39, %eax; syscall` in glibc), which a kernel may treat
 * differently from the generic syscall() above (HRT rewrites such sites into calls). */
static double rep_getpid_libc(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    uint64_t t0 = bench_tsc();
    for (int i = 0; i < CALL_BATCH; i++)
        getpid();
    return (double)(bench_tsc() - t0) / CALL_BATCH;
}

/* FUTEX_WAKE of a word nobody waits on, as OpenMP runtimes issue at every barrier: inline
 * `syscall` with a constant number, as libgomp does. */
static int futex_word;
static double rep_futex_wake(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    long ret, any = 0;
    uint64_t t0 = bench_tsc();
    for (int i = 0; i < CALL_BATCH; i++) {
        __asm__ volatile("syscall"
                         : "=a"(ret)
                         : "0"((long)SYS_futex), "D"(&futex_word), "S"(1L | 128L), "d"(1L)
                         : "rcx", "r11", "memory");
        any |= ret;
    }
    uint64_t t1 = bench_tsc();
    if (any != 0) {
        fprintf(stderr, "futex wake: %ld\n", any);
        exit(1);
    }
    return (double)(t1 - t0) / CALL_BATCH;
}

/* getpid under a seccomp filter of the shape libseccomp makes for a sandbox: the
 * architecture checked, x32 numbers refused, then 30 numbers compared one by one, getpid
 * last (35 instructions run per call; every call is allowed, so the child can report).
 * Linux runs filters JIT-compiled, HRT's kernel interprets them; in a forked child, since a
 * filter cannot be removed. */
static int failed; /* defined with the others below */
static void test_getpid_filtered(void) {
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        exit(1);
    }
    if (child == 0) {
        struct sock_filter f[40];
        int n = 0;
        f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 32, 0);
        for (int k = 0; k < 29; k++) /* numbers the program never makes: never matched */
            f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 400 + k, 30 - k, 0);
        f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpid, 1, 0);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM);
        struct sock_fprog prog = {.len = (unsigned short)n, .filter = f};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
            perror("seccomp");
            _exit(1);
        }
        sampled("getpid.filtered", "cycles", 10000, 1000, 100, rep_getpid, NULL, NULL, 1);
        fflush(stdout);
        _exit(failed);
    }
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "getpid.filtered: the child failed (status %#x)\n", status);
        failed = 1;
    }
}

/* A signal the thread sends itself (tgkill) and its handler's return through the C
 * library's restorer (rt_sigreturn), CALL_BATCH times: what a profiler's or a runtime's
 * preemption signal costs. */
static volatile long handled;
static void on_signal(int sig) {
    (void)sig;
    handled++;
}

static double rep_signal(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    long pid = getpid(), tid = syscall(SYS_gettid), before = handled;
    uint64_t t0 = bench_tsc();
    for (int i = 0; i < CALL_BATCH; i++)
        syscall(SYS_tgkill, pid, tid, SIGUSR2);
    uint64_t t1 = bench_tsc();
    if (handled - before != CALL_BATCH) {
        fprintf(stderr, "signal: %ld handlers ran, not %d\n", handled - before, CALL_BATCH);
        exit(1);
    }
    return (double)(t1 - t0) / CALL_BATCH;
}

static void test_getpid(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR2, &sa, NULL);
    sampled("getpid", "cycles", 10000, 1000, 100, rep_getpid, NULL, NULL, 1);
    sampled("getpid.libc", "cycles", 10000, 1000, 100, rep_getpid_libc, NULL, NULL, 1);
    sampled("futex_wake", "cycles", 10000, 1000, 100, rep_futex_wake, NULL, NULL, 1);
    sampled("signal", "cycles", 10000, 1000, 100, rep_signal, NULL, NULL, 1);
    /* Back to the default: the forwarded rows below are those of a program without handlers
     * (forward.read_4k.with_handler is the one with). */
    signal(SIGUSR2, SIG_DFL);
}

/* Forwarded I/O (issue 11): a 4 KiB pread of a cached file, a 1-byte write into a pipe that a
 * thread drains, copying a file through read/write (`cat` to /dev/null), and compute threads
 * with and without a thread blocked in read() on an idle pipe. */
static int file4k = -1;
static char *file_path;

static double rep_read_4k(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    char buf[4096];
    uint64_t t0 = bench_tsc();
    if (pread(file4k, buf, sizeof buf, 0) != (ssize_t)sizeof buf) {
        perror("pread 4 KiB");
        exit(1);
    }
    return (double)(bench_tsc() - t0);
}

/* A 1-byte write to /dev/null after 200 us without system calls, as a program that makes a call
 * now and then: a forwarding service that sleeps after a shorter spin is woken by a doorbell. */
static double rep_write_after_gap(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    uint64_t until = bench_tsc() + (uint64_t)(tsc_hz * 200e-6);
    while (bench_tsc() < until)
        __builtin_ia32_pause();
    return rep_write_devnull(NULL, NULL);
}

static int drain_pipe[2];
static void *drainer(void *arg) {
    (void)arg;
    char buf[65536];
    while (read(drain_pipe[0], buf, sizeof buf) > 0) {
    }
    return NULL;
}

static double rep_write_pipe(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    uint64_t t0 = bench_tsc();
    if (write(drain_pipe[1], "x", 1) != 1) {
        perror("write pipe");
        exit(1);
    }
    return (double)(bench_tsc() - t0);
}

/* Calls the host answers at once: `poll` of a pipe that holds a byte, no timeout (ctx 0),
 * `recv` of a non-blocking socket with nothing there, EAGAIN (ctx 1), `select` of that pipe
 * with a 1 s timeout (ctx 2), and a blocking stream socket's one-byte `send` and the `recv`
 * that takes it back (ctx 3). */
static int ready_pipe[2], empty_socket[2], stream_pair[2];

static double rep_answered_at_once(void *ctx, double *aux) {
    (void)aux;
    struct pollfd p = {ready_pipe[0], POLLIN, 0};
    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(ready_pipe[0], &rs);
    struct timeval second = {1, 0};
    char c;
    static const char *what[] = {"poll of a ready pipe", "recv of an empty socket", "select of a ready pipe",
                                 "send and recv on a stream socket"};
    long which = (long)ctx;
    uint64_t t0 = bench_tsc();
    int ok;
    switch (which) {
    case 0:
        ok = poll(&p, 1, -1) == 1;
        break;
    case 1:
        ok = recv(empty_socket[0], &c, 1, 0) == -1 && errno == EAGAIN;
        break;
    case 2:
        ok = select(ready_pipe[0] + 1, &rs, NULL, NULL, &second) == 1;
        break;
    default:
        ok = send(stream_pair[0], "x", 1, 0) == 1 && recv(stream_pair[1], &c, 1, 0) == 1;
    }
    uint64_t t1 = bench_tsc();
    if (!ok) {
        perror(what[which]);
        exit(1);
    }
    return (double)(t1 - t0);
}

static double rep_cat(void *ctx, double *aux) {
    (void)ctx, (void)aux;
    static char buf[128 << 10];
    double t0 = bench_now();
    int fd = open(file_path, O_RDONLY);
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        if (write(devnull, buf, (size_t)n) != n) {
            perror("cat write");
            exit(1);
        }
    close(fd);
    return (bench_now() - t0) * 1e3;
}

static volatile double compute_sink;
static void *compute_thread(void *arg) {
    (void)arg;
    double x = 0;
    for (long i = 0; i < 30000000; i++)
        x += (double)(i & 1023) * 1e-9;
    compute_sink = x;
    return NULL;
}

static int idle_pipe[2];
static void *blocked_reader(void *arg) {
    (void)arg;
    char c;
    if (read(idle_pipe[0], &c, 1) != 1)
        perror("blocked reader");
    return NULL;
}

/* ncpu compute threads' wall time in ms; with `blocked`, a further thread sits in read() on an
 * idle pipe all along (released afterwards). */
static double rep_compute(void *ctx, double *aux) {
    (void)aux;
    int blocked = ctx != NULL;
    pthread_t reader, th[64];
    int n = ncpu < 64 ? ncpu : 64;
    if (blocked) {
        spawn(&reader, blocked_reader, NULL);
        usleep(10000);
    }
    double t0 = bench_now();
    for (int i = 0; i < n; i++)
        spawn(&th[i], compute_thread, NULL);
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    double ms = (bench_now() - t0) * 1e3;
    if (blocked) {
        if (write(idle_pipe[1], "x", 1) != 1)
            perror("release reader");
        pthread_join(reader, NULL);
    }
    return ms;
}

static void test_write_devnull(void) {
    sampled("write_devnull", "cycles", 10000, 1000, 100, rep_write_devnull, NULL, NULL, 1);
}

static void test_forwarded_io(void) {
    char tmpl[] = "/tmp/hrt-bench-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) {
        perror("mkstemp");
        exit(1);
    }
    file_path = tmpl;
    size_t mib = quick ? 20 : 200;
    static char chunk[1 << 20];
    memset(chunk, 'a', sizeof chunk);
    for (size_t i = 0; i < mib; i++)
        if (write(fd, chunk, sizeof chunk) != (ssize_t)sizeof chunk) {
            perror("writing the test file");
            exit(1);
        }
    file4k = fd;
    sampled("forward.read_4k", "cycles", 10000, 1000, 100, rep_read_4k, NULL, NULL, 1);
    /* The same with a signal handler installed: under hrt each such read also waits for the
     * signals another process sent before it (monitor/src/taken_signals.rs). */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR2, &sa, NULL);
    sampled("forward.read_4k.with_handler", "cycles", 10000, 1000, 100, rep_read_4k, NULL, NULL, 1);
    signal(SIGUSR2, SIG_DFL);
    sampled("forward.write_after_200us", "cycles", 2000, 300, 100, rep_write_after_gap, NULL, NULL, 1);
    if (pipe(drain_pipe) != 0) {
        perror("pipe");
        exit(1);
    }
    pthread_t d;
    spawn(&d, drainer, NULL);
    sampled("forward.write_pipe", "cycles", 10000, 1000, 100, rep_write_pipe, NULL, NULL, 1);
    close(drain_pipe[1]);
    pthread_join(d, NULL);
    sampled(quick ? "forward.cat_20m" : "forward.cat_200m", "ms", 10, 3, 3, rep_cat, NULL, NULL, 1);
    if (pipe(idle_pipe) != 0) {
        perror("pipe");
        exit(1);
    }
    if (pipe(ready_pipe) != 0 || write(ready_pipe[1], "x", 1) != 1 ||
        socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, empty_socket) != 0 ||
        socketpair(AF_UNIX, SOCK_STREAM, 0, stream_pair) != 0) {
        perror("pipe/socketpair");
        exit(1);
    }
    sampled("forward.poll_ready", "cycles", 10000, 1000, 100, rep_answered_at_once, NULL, NULL, 1);
    sampled("forward.recv_empty", "cycles", 10000, 1000, 100, rep_answered_at_once, (void *)1, NULL, 1);
    sampled("forward.select_ready", "cycles", 10000, 1000, 100, rep_answered_at_once, (void *)2, NULL, 1);
    sampled("forward.stream_exchange", "cycles", 10000, 1000, 100, rep_answered_at_once, (void *)3, NULL, 1);
    sampled("forward.compute", "ms", 10, 3, 3, rep_compute, NULL, NULL, ncpu);
    sampled("forward.compute_blocked_reader", "ms", 10, 3, 3, rep_compute, (void *)1, NULL, ncpu);
    close(fd);
    unlink(tmpl);
}

#define MMAP_BYTES (64UL << 20)

/* mmap of `size` bytes with every 4 KiB page written once. */
static char *map_touched(size_t size) {
    char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    for (size_t off = 0; off < size; off += 4096)
        p[off] = 1;
    return p;
}

static double rep_mmap_touch(void *ctx, double *faults) {
    (void)ctx;
    long f0 = minflt();
    double t0 = bench_now();
    char *p = map_touched(MMAP_BYTES);
    munmap(p, MMAP_BYTES);
    double us = (bench_now() - t0) * 1e6;
    *faults = (double)(minflt() - f0);
    return us;
}

/* A child process: fork, the child's _exit(0) and the parent's waitpid (under hrt the child
 * is a VM of its own in a host process of its own). */
static double rep_fork_wait(void *ctx, double *aux) {
    (void)ctx;
    *aux = 0;
    double t0 = bench_now();
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        exit(1);
    }
    if (child == 0)
        _exit(0);
    int status;
    waitpid(child, &status, 0);
    return (bench_now() - t0) * 1e6;
}

static void test_fork_wait(void) {
    fflush(stdout);
    sampled("fork_wait", "us", 50, 10, 5, rep_fork_wait, NULL, NULL, 1);
}

static void test_mmap_touch(void) {
    sampled("mmap_touch_64m", "us", 50, 10, 5, rep_mmap_touch, NULL, "mmap_touch_64m.faults", 1);
}

/* Shared memory as MPI's intranode transport uses it: a 4 MiB /dev/shm file (SHM_FILE) or SysV
 * segment (SHM_SYSV) created, mapped shared, every 4 KiB page written once, unmapped. Under
 * HRT the pages are the host's page-cache pages, so each first touch is KVM's business. */
enum { SHM_FILE, SHM_SYSV };
#define SHM_BYTES (4UL << 20)

static double rep_shm_touch(void *ctx, double *aux) {
    (void)aux;
    double t0 = bench_now();
    char *p;
    if ((long)ctx == SHM_FILE) {
        char name[64];
        snprintf(name, sizeof name, "/dev/shm/hrt-bench-%d", (int)getpid());
        int fd = open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || unlink(name) || ftruncate(fd, SHM_BYTES)) {
            perror("shm_touch: /dev/shm file");
            exit(1);
        }
        p = mmap(NULL, SHM_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (p == MAP_FAILED) {
            perror("shm_touch: mmap");
            exit(1);
        }
    } else {
        int id = shmget(IPC_PRIVATE, SHM_BYTES, IPC_CREAT | 0600);
        p = id < 0 ? (char *)-1 : shmat(id, NULL, 0);
        if (p == (char *)-1) {
            perror("shm_touch: shmget/shmat");
            exit(1);
        }
        shmctl(id, IPC_RMID, NULL);
    }
    for (size_t off = 0; off < SHM_BYTES; off += 4096)
        ((volatile char *)p)[off] = 1;
    if ((long)ctx == SHM_FILE)
        munmap(p, SHM_BYTES);
    else
        shmdt(p);
    return (bench_now() - t0) * 1e6;
}

static void test_shm_touch(void) {
    sampled("shm_touch.file_4m", "us", 50, 10, 5, rep_shm_touch, (void *)(long)SHM_FILE, NULL, 1);
    sampled("shm_touch.sysv_4m", "us", 50, 10, 5, rep_shm_touch, (void *)(long)SHM_SYSV, NULL, 1);
}

/* Returning memory: munmap of SIZE bytes (each page written first, untimed), and a 1 MiB
 * malloc + one write + free, which glibc serves with mmap and munmap once its threshold is fixed
 * at the default 128 KiB (it otherwise rises to the size of the first freed block and later
 * blocks come from the heap). */
static double rep_munmap(void *ctx, double *aux) {
    size_t size = (size_t)ctx;
    (void)aux;
    char *p = map_touched(size);
    uint64_t t0 = bench_tsc();
    munmap(p, size);
    return (double)(bench_tsc() - t0);
}

static double rep_malloc_free(void *ctx, double *aux) {
    (void)ctx;
    (void)aux;
    uint64_t t0 = bench_tsc();
    for (int i = 0; i < 100; i++) {
        char *volatile b = malloc(1 << 20);
        b[i * 4096] = 1;
        free(b);
    }
    return (double)(bench_tsc() - t0) / 100;
}

static void test_munmap(void) {
    sampled("munmap_4k", "cycles", 2000, 200, 50, rep_munmap, (void *)4096UL, NULL, 1);
    sampled("munmap_2m", "cycles", 500, 100, 20, rep_munmap, (void *)(2UL << 20), NULL, 1);
    sampled("munmap_64m", "cycles", 50, 10, 5, rep_munmap, (void *)MMAP_BYTES, NULL, 1);
    mallopt(M_MMAP_THRESHOLD, 128 << 10);
    sampled("malloc_free_1m", "cycles", 200, 50, 10, rep_malloc_free, NULL, NULL, 1);
}

/* LULESH-like heap breathing: 1000 steps of sbrk(+K), touch every page, sbrk(-K), with K
 * cycling through 4 KiB .. 1 MiB. */
static double rep_brk(void *ctx, double *faults) {
    (void)ctx;
    static const long sizes[] = {4096, 16384, 65536, 262144, 1048576, 131072, 8192};
    const int nsizes = sizeof sizes / sizeof sizes[0];
    long f0 = minflt();
    double t0 = bench_now();
    for (int step = 0; step < 1000; step++) {
        long k = sizes[step % nsizes];
        char *p = sbrk(k);
        if (p == (void *)-1) {
            perror("sbrk");
            exit(1);
        }
        for (long off = 0; off < k; off += 4096)
            p[off] = 1;
        if (sbrk(-k) == (void *)-1) {
            perror("sbrk shrink");
            exit(1);
        }
    }
    double us = (bench_now() - t0) * 1e6;
    *faults = (double)(minflt() - f0);
    return us;
}

static int failed; /* a test could not run: exit status 1 after the others */

static void test_brk_pattern(void) {
    if (sbrk(4096) == (void *)-1) {
        int e = errno;
        printf("# brk_pattern: not run: the break does not grow (sbrk(4096): %s)\n", strerror(e));
        fprintf(stderr, "micro: brk_pattern: sbrk(4096): %s\n", strerror(e));
        failed = 1;
        return;
    }
    sbrk(-4096);
    sampled("brk_pattern", "us", 20, 5, 3, rep_brk, NULL, "brk_pattern.faults", 1);
}

/* ---------------------------------------------------------------- FWQ, noise */

/* Fixed Work Quantum: every member (one per CPU) times the same work quantum many times. */
static void fwq_member(int idx, void *ctx) {
    struct team_run *t = ctx;
    double *mine = t->v + (size_t)idx * t->samples;
    uint64_t x = (uint64_t)idx;
    sbar_wait(&t->bar);
    for (long s = 0; s < t->samples; s++) {
        uint64_t t0 = bench_tsc();
        x = work(x, WORK_ITERS);
        mine[s] = (double)(bench_tsc() - t0);
    }
    sink = x;
}

static void test_fwq(void) {
    struct team_run t = {.bar = {.n = ncpu}, .samples = quick ? 10000 : 100000};
    t.v = bench_alloc(sizeof(double) * t.samples * ncpu);
    run_team(ncpu, fwq_member, &t);
    report_pinning("fwq");
    printf("# fwq: %d iterations of dependent multiply-add per quantum, %ld quanta per CPU\n",
           WORK_ITERS, t.samples);
    bench_result_opts("micro", "fwq", "cycles", t.v, (size_t)t.samples * ncpu,
                      threads_key(ncpu), 1, 1);
    free(t.v);
}

/* Members below `compute` time work quanta; the others (if `hammer`) make system calls
 * (getpid, 1-byte write to /dev/null) until the compute members are done. */
static struct {
    int compute, hammer;
    long samples;
    double *v;
    atomic_int started, done;
} nz;

static void noise_member(int idx, void *ctx) {
    (void)ctx;
    if (idx >= nz.compute) {
        atomic_fetch_add(&nz.started, 1);
        while (atomic_load(&nz.done) < nz.compute) {
            syscall(SYS_getpid);
            if (write(devnull, "x", 1) != 1)
                exit(1);
        }
        return;
    }
    WAIT_UNTIL(atomic_load(&nz.started) >= nz.hammer);
    double *mine = nz.v + (size_t)idx * nz.samples;
    uint64_t x = (uint64_t)idx;
    for (long s = 0; s < nz.samples; s++) {
        uint64_t t0 = bench_tsc();
        x = work(x, WORK_ITERS);
        mine[s] = (double)(bench_tsc() - t0);
    }
    sink = x;
    atomic_fetch_add(&nz.done, 1);
}

static void noise_run(const char *name, int hammer) {
    nz.hammer = hammer;
    atomic_store(&nz.started, 0);
    atomic_store(&nz.done, 0);
    run_team(nz.compute + hammer, noise_member, NULL);
    bench_result("micro", name, "cycles", nz.v, (size_t)nz.samples * nz.compute,
                 threads_key(nz.compute));
}

static void test_noise(void) {
    nz.compute = ncpu / 2 > 0 ? ncpu / 2 : 1;
    nz.samples = quick ? 2000 : 10000;
    nz.v = bench_alloc(sizeof(double) * nz.samples * nz.compute);
    printf("# noise: %d compute thread(s) time %ld work quanta each; %d other thread(s) make "
           "system calls (getpid, write /dev/null) for noise.with\n",
           nz.compute, nz.samples, ncpu - nz.compute);
    noise_run("noise.alone", 0);
    if (ncpu > nz.compute)
        noise_run("noise.with", ncpu - nz.compute);
    else
        printf("# noise: one CPU, no room for interfering threads: noise.with skipped\n");
    report_pinning("noise");
    free(nz.v);
}

/* ---------------------------------------------------------------- buffer */

/* Producer/consumer pairs, each through its own ring buffer guarded by two POSIX semaphores
 * (free slots, filled slots) and a mutex. Members 2p and 2p+1 are pair p's producer and
 * consumer. A sample moves BUF_ITEMS items through every pair; member 0 times it. */
#define BUF_SLOTS 16
#define BUF_ITEMS 64

struct ring {
    sem_t free_slots, filled;
    pthread_mutex_t m;
    unsigned head, tail;
    long slot[BUF_SLOTS];
} __attribute__((aligned(64)));

static struct {
    struct team_run t;
    struct ring *rings;
    int pairs;
    int disorder;
} bf;

static void buffer_transfer(int idx) {
    struct ring *r = &bf.rings[idx / 2];
    for (long i = 0; i < BUF_ITEMS; i++) {
        if (idx % 2 == 0) {
            sem_wait(&r->free_slots);
            pthread_mutex_lock(&r->m);
            r->slot[r->head++ % BUF_SLOTS] = i;
            pthread_mutex_unlock(&r->m);
            sem_post(&r->filled);
        } else {
            sem_wait(&r->filled);
            pthread_mutex_lock(&r->m);
            long item = r->slot[r->tail++ % BUF_SLOTS];
            pthread_mutex_unlock(&r->m);
            sem_post(&r->free_slots);
            if (item != i)
                bf.disorder = 1; /* reported below */
        }
    }
}

static void buffer_member(int idx, void *ctx) {
    (void)ctx;
    struct team_run *t = &bf.t;
    sbar_wait(&t->bar); /* calibration sample */
    double c0 = bench_now();
    buffer_transfer(idx);
    sbar_wait(&t->bar);
    if (idx == 0)
        t->samples = plan_reps("buffer", t->samples, 5, bench_now() - c0);
    sbar_wait(&t->bar);
    for (long s = 0; s < t->samples; s++) {
        sbar_wait(&t->bar);
        uint64_t t0 = bench_tsc();
        buffer_transfer(idx);
        sbar_wait(&t->bar);
        if (idx == 0)
            t->v[s] = (double)(bench_tsc() - t0) / ((double)BUF_ITEMS * bf.pairs);
    }
}

static void test_buffer(void) {
    bf.pairs = ncpu / 2 > 0 ? ncpu / 2 : 1;
    bf.rings = bench_alloc(sizeof(struct ring) * bf.pairs);
    for (int p = 0; p < bf.pairs; p++) {
        sem_init(&bf.rings[p].free_slots, 0, BUF_SLOTS);
        sem_init(&bf.rings[p].filled, 0, 0);
        pthread_mutex_init(&bf.rings[p].m, NULL);
    }
    bf.t = (struct team_run){.bar = {.n = 2 * bf.pairs}, .samples = quick ? 200 : 1000};
    bf.t.v = bench_alloc(sizeof(double) * bf.t.samples);
    printf("# buffer: %d pair(s), %d slots, %d items per sample and pair\n", bf.pairs, BUF_SLOTS,
           BUF_ITEMS);
    run_team(2 * bf.pairs, buffer_member, NULL);
    report_pinning("buffer");
    if (bf.disorder) {
        fprintf(stderr, "buffer: items arrived out of order\n");
        exit(1);
    }
    bench_result("micro", "buffer", "cycles", bf.t.v, bf.t.samples, threads_key(2 * bf.pairs));
    for (int p = 0; p < bf.pairs; p++) {
        sem_destroy(&bf.rings[p].free_slots);
        sem_destroy(&bf.rings[p].filled);
    }
    free(bf.rings);
    free(bf.t.v);
}

/* ---------------------------------------------------------------- main */

static const struct {
    const char *name;
    void (*run)(void);
} tests[] = {
    {"thread_create", test_thread_create},
    {"thread_create_seq", test_thread_create_seq},
    {"create_join", test_create_join},
    {"cond_wakeup", test_cond_wakeup},
    {"spin_uncontended", test_spin_uncontended},
    {"spin_contended", test_spin_contended},
    {"barrier", test_barrier},
    {"sleep_10us", test_sleep},
    {"getpid", test_getpid},
    {"getpid_filtered", test_getpid_filtered},
    {"write_devnull", test_write_devnull},
    {"forward", test_forwarded_io},
    {"mmap_touch_64m", test_mmap_touch},
    {"fork_wait", test_fork_wait},
    {"brk_pattern", test_brk_pattern},
    {"munmap", test_munmap},
    {"shm_touch", test_shm_touch},
    {"fwq", test_fwq},
    {"forkjoin", test_forkjoin},
    {"buffer", test_buffer},
    {"noise", test_noise},
};
#define NTESTS (sizeof tests / sizeof tests[0])

/* Index of the test a --only name designates (the test's name, or a result name whose part
 * before the first '.' is the test's name), or -1. */
static int test_index(const char *name, size_t len) {
    for (size_t i = 0; i < NTESTS; i++) {
        size_t n = strlen(tests[i].name);
        if (len >= n && !strncmp(name, tests[i].name, n) && (len == n || name[n] == '.'))
            return (int)i;
    }
    return -1;
}

static double median_syscall_seconds(void) {
    double v[9];
    for (int i = 0; i < 9; i++) {
        double t0 = bench_now();
        syscall(SYS_getpid);
        v[i] = bench_now() - t0;
    }
    qsort(v, 9, sizeof v[0], bench_cmp_double);
    return v[4];
}

int main(int argc, char **argv) {
    int selected[NTESTS] = {0}, any_selected = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
        } else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            for (const char *p = argv[++i]; *p;) {
                size_t len = strcspn(p, ",");
                int t = test_index(p, len);
                if (t < 0) {
                    fprintf(stderr, "micro: unknown test '%.*s'\n", (int)len, p);
                    return 2;
                }
                selected[t] = any_selected = 1;
                p += len + (p[len] == ',');
            }
        } else {
            fprintf(stderr, "usage: micro [--quick] [--only NAME[,NAME...]]\n");
            return 2;
        }
    }

    ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu < 1)
        ncpu = 1;
    budget_s = quick ? 1.0 : 8.0;
    devnull = open("/dev/null", O_WRONLY);
    if (devnull < 0) {
        perror("/dev/null");
        return 1;
    }
    pthread_attr_init(&thread_attr);
    pthread_attr_setstacksize(&thread_attr, STACK_SIZE);
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    tsc_hz = bench_tsc_hz();
    yield_after = (uint64_t)(50e-6 * tsc_hz);
    syscall_cost_s = median_syscall_seconds();
    uint64_t t0 = bench_tsc();
    uint64_t tsc_cost = bench_tsc() - t0;
    printf("# micro: cpus=%d tsc=%.3f GHz getpid=%.3f us tsc_read=%llu cycles stack=%d KiB "
           "budget=%.1f s per result%s\n",
           ncpu, tsc_hz / 1e9, syscall_cost_s * 1e6, (unsigned long long)tsc_cost,
           STACK_SIZE / 1024, budget_s, quick ? " (quick)" : "");
    fflush(stdout);

    for (size_t i = 0; i < NTESTS; i++) {
        if (any_selected && !selected[i])
            continue;
        tests[i].run();
        fflush(stdout);
    }
    pthread_spin_destroy(&spin);
    close(devnull);
    return failed;
}
