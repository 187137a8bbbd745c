/* rseq(2): glibc's registration, the CPU numbers the kernel keeps in the area (after moves
 * to each CPU, in a forked child), critical sections aborted by a signal, by a preemption and
 * by a move to another CPU, the registration's errors, and a bad descriptor (SIGSEGV). The
 * output is the same natively and under hrt with 2 or more CPUs. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define SIG 0x53053053

static struct rseq *area(void) { return (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset); }

static long rs(void *a, unsigned len, int flags, unsigned sig) { return syscall(SYS_rseq, a, len, flags, sig); }

static void show(const char *what, long r) {
    printf("%-34s %s\n", what, r == 0 ? "0" : r > 0 ? "positive" : strerrorname_np(errno));
}

static void pin(pid_t tid, int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(tid, sizeof s, &s)) {
        perror("sched_setaffinity");
        exit(1);
    }
}

static unsigned real_cpu(void) {
    unsigned cpu = 99;
    syscall(SYS_getcpu, &cpu, NULL, NULL);
    return cpu;
}

static volatile int stop, in_section;

/* Spins inside a critical section until `stop`, entering it again after each abort (the
 * kernel clears rseq_cs then); returns how many times it left through the abort address. */
static int section(struct rseq *rs_area) {
    int aborts = 0;
    __asm__ volatile(".pushsection __rseq_cs, \"aw\"\n"
                     ".balign 32\n"
                     "3: .long 0, 0\n"
                     ".quad 7f, 2f - 7f, 4f\n"
                     ".popsection\n"
                     "6: lea 3b(%%rip), %%rax\n"
                     "mov %%rax, 8(%[rs])\n"
                     "7: movl $1, %[in]\n"
                     "1: cmpl $0, %[stop]\n"
                     "je 1b\n"
                     "2: jmp 5f\n"
                     ".long 0x53053053\n"
                     "4: incl %[ab]\n"
                     "cmpl $0, %[stop]\n"
                     "je 6b\n"
                     "5:\n"
                     : [ab] "+r"(aborts), [in] "=m"(in_section)
                     : [rs] "r"(rs_area), [stop] "m"(stop)
                     : "rax", "memory", "cc");
    rs_area->rseq_cs = 0;
    in_section = 0;
    return aborts;
}

/* The alarm repeats until one lands inside the section (a busy host can delay the thread past
 * the first one). */
static void on_alarm(int sig) {
    (void)sig;
    if (in_section) stop = 1;
}

static const struct itimerval no_alarm;

static void *setter(void *arg) {
    /* Runs only once the section's thread is preempted (both on one CPU) or, with `arg`,
     * moves it to the other CPU first. */
    pid_t *tid = arg;
    while (!in_section) sched_yield();
    if (tid) pin(*tid, 1);
    stop = 1;
    return NULL;
}

static pid_t section_tid;
static int section_result;
static void *section_thread(void *arg) {
    (void)arg;
    section_tid = gettid();
    section_result = section(area());
    return NULL;
}

static void on_usr1(int sig) { (void)sig; }

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("glibc registered: %s (size %u)\n", __rseq_size ? "yes" : "no", __rseq_size);
    if (!__rseq_size) return 1;
    struct rseq *r = area();
    for (int c = 0; c < 2; c++) {
        pin(0, c);
        printf("on cpu %d: cpu_id %s, cpu_id_start %s, sched_getcpu %s, node_id %u\n", c,
               r->cpu_id == real_cpu() ? "right" : "wrong", r->cpu_id_start == real_cpu() ? "right" : "wrong",
               sched_getcpu() == (int)real_cpu() ? "right" : "wrong", ((volatile uint32_t *)r)[5]);
    }
    pin(0, 0);

    /* A signal inside the section: the handler's return goes to the abort address. */
    signal(SIGALRM, on_alarm);
    struct itimerval it = {{0, 20000}, {0, 20000}};
    stop = 0;
    setitimer(ITIMER_REAL, &it, NULL);
    int aborted = section(r);
    setitimer(ITIMER_REAL, &no_alarm, NULL);
    printf("signal in a section: %s\n", aborted ? "aborted" : "not aborted");

    /* A preemption: the setter shares the section's CPU and runs only when it is preempted. */
    pthread_t a, b;
    pthread_attr_t at;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    pthread_attr_init(&at);
    pthread_attr_setaffinity_np(&at, sizeof one, &one);
    pin(0, 1);
    stop = 0;
    pthread_create(&a, &at, section_thread, NULL);
    pthread_create(&b, &at, setter, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("preempted in a section: %s\n", section_result ? "aborted" : "not aborted");

    /* A move: the setter (on CPU 1) moves the section's thread from CPU 0 to CPU 1. */
    stop = 0;
    section_tid = 0;
    pthread_create(&a, &at, section_thread, NULL);
    while (!section_tid) sched_yield();
    cpu_set_t other;
    CPU_ZERO(&other);
    CPU_SET(1, &other);
    pthread_attr_t bt;
    pthread_attr_init(&bt);
    pthread_attr_setaffinity_np(&bt, sizeof other, &other);
    pthread_create(&b, &bt, setter, &section_tid);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("moved in a section: %s\n", section_result ? "aborted" : "not aborted");

    /* A forked child on another CPU than its parent's sees its own CPU. */
    pin(0, 1);
    pid_t child = fork();
    if (child == 0) {
        pin(0, 0);
        _exit(r->cpu_id == real_cpu() && sched_getcpu() == (int)real_cpu() ? 0 : 1);
    }
    int status;
    waitpid(child, &status, 0);
    printf("forked child's cpu_id: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "right" : "wrong");

    /* membarrier's RSEQ fence: the section's thread, alone on CPU 0, aborts (this one is on
     * CPU 1). */
    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0, 0);
    stop = 0;
    pthread_create(&a, &at, section_thread, NULL);
    while (!in_section) sched_yield();
    show("membarrier rseq fence", syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0));
    stop = 1;
    pthread_join(a, NULL);
    printf("fenced in a section: %s\n", section_result ? "aborted" : "not aborted");

    /* A bad descriptor (version 1) met at a signal's delivery: SIGSEGV. */
    child = fork();
    if (child == 0) {
        static struct rseq_cs bad __attribute__((aligned(32))) = {.version = 1};
        signal(SIGUSR1, on_usr1);
        r->rseq_cs = (uintptr_t)&bad;
        raise(SIGUSR1);
        _exit(0);
    }
    waitpid(child, &status, 0);
    printf("bad descriptor: %s\n", WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "no signal");

    /* The registration's errors, in Linux's order. */
    static struct rseq own __attribute__((aligned(32)));
    show("again, same", rs(r, 32, 0, SIG));
    show("again, other signature", rs(r, 32, 0, SIG + 1));
    show("again, other length", rs(r, 64, 0, SIG));
    show("another area", rs(&own, 32, 0, SIG));
    show("unknown flag", rs(r, 32, 2, SIG));
    show("unregister, other area", rs(&own, 32, RSEQ_FLAG_UNREGISTER, SIG));
    show("unregister, other length", rs(r, 64, RSEQ_FLAG_UNREGISTER, SIG));
    show("unregister, other signature", rs(r, 32, RSEQ_FLAG_UNREGISTER, SIG + 1));
    show("unregister, extra flag", rs(r, 32, RSEQ_FLAG_UNREGISTER | 2, SIG));
    show("unregister", rs(r, 32, RSEQ_FLAG_UNREGISTER, SIG));
    printf("after unregister: cpu_id %d, sched_getcpu %s\n", (int)r->cpu_id,
           sched_getcpu() == (int)real_cpu() ? "right" : "wrong");
    show("unregister again", rs(r, 32, RSEQ_FLAG_UNREGISTER, SIG));
    show("length 16", rs(&own, 16, 0, SIG));
    show("misaligned", rs((char *)&own + 8, 32, 0, SIG));
    show("kernel address", rs((void *)0xffff800000000000ul, 32, 0, SIG));
    show("own area", rs(&own, 32, 0, SIG));
    printf("own area's cpu_id: %s\n", own.cpu_id == real_cpu() ? "right" : "wrong");
    stop = 0;
    setitimer(ITIMER_REAL, &it, NULL);
    aborted = section(&own);
    setitimer(ITIMER_REAL, &no_alarm, NULL);
    printf("signal in a section, own area: %s\n", aborted ? "aborted" : "not aborted");
    printf("rseq done\n");
    return 0;
}
