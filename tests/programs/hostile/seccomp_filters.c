/* seccomp: strict mode and BPF filters, each case in a forked child whose end the parent
 * reports (exit code or signal): ERRNO on a call the fast path serves (getpid), TRAP with a
 * SIGSYS handler that emulates the call, TRAP while SIGSYS is blocked, KILL_PROCESS, KILL_THREAD
 * with one and with two threads, strict mode, a filter on an argument, precedence of several
 * filters and of the actions, TSYNC and inheritance by new threads, filters Linux refuses, and
 * filters that reach host programs (system(), fork + exec) and an exec of this program. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#define NR_OFF offsetof(struct seccomp_data, nr)
#define ARG0_OFF offsetof(struct seccomp_data, args[0])

static long install(struct sock_filter *f, unsigned short len, unsigned flags) {
    struct sock_fprog prog = {.len = len, .filter = f};
    long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
    return r < 0 ? -errno : r;
}

/* A filter that answers `action` for call `nr` and allows the rest. */
static long deny(int nr, unsigned action, unsigned flags) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, action),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    return install(f, 4, flags);
}

static void nnp(void) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        perror("PR_SET_NO_NEW_PRIVS");
        exit(90);
    }
}

static void show(const char *what, long r) {
    if (r < 0)
        printf("  %s = -1 errno %d\n", what, errno);
    else
        printf("  %s = %ld\n", what, r);
}

/* The Seccomp and Seccomp_filters lines of /proc/thread-self/status. */
static void status_lines(void) {
    FILE *f = fopen("/proc/thread-self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Seccomp", 7) == 0)
            printf("  %s", line);
    if (f)
        fclose(f);
}

static void case_errno(void) {
    nnp();
    show("PR_GET_SECCOMP before", prctl(PR_GET_SECCOMP, 0, 0, 0, 0));
    show("install", deny(SYS_getpid, SECCOMP_RET_ERRNO | EPERM, 0));
    int failed = 0;
    for (int i = 0; i < 2000; i++) /* the site is rewritten after its first call */
        failed += syscall(SYS_getpid) == -1 && errno == EPERM;
    printf("  getpid failed %d of 2000 times\n", failed);
    printf("  gettid works: %d\n", syscall(SYS_gettid) > 0);
    show("PR_GET_SECCOMP", prctl(PR_GET_SECCOMP, 0, 0, 0, 0));
    printf("  big errno data capped: %ld\n", deny(SYS_getppid, SECCOMP_RET_ERRNO | 0xffff, 0));
    show("getppid", syscall(SYS_getppid));
}

static volatile long trap_nr, trap_rax;
static volatile int trap_code, trap_errno, trap_arch_ok, trap_addr_ok;

static void on_sigsys(int sig, siginfo_t *si, void *ctx) {
    ucontext_t *uc = ctx;
    trap_nr = si->si_syscall;
    trap_code = si->si_code;
    trap_errno = si->si_errno;
    trap_arch_ok = si->si_arch == AUDIT_ARCH_X86_64;
    trap_addr_ok = si->si_call_addr != NULL;
    trap_rax = uc->uc_mcontext.gregs[REG_RAX];
    uc->uc_mcontext.gregs[REG_RAX] = 77; /* what the call "returns" */
}

static void case_trap(void) {
    struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
    sigaction(SIGSYS, &sa, NULL);
    nnp();
    deny(SYS_uname, SECCOMP_RET_TRAP | 0x42, 0);
    struct utsname u;
    long r = syscall(SYS_uname, &u);
    printf("  uname returned %ld; handler saw nr %ld code %d errno %#x arch ok %d address ok %d rax %ld\n", r,
           trap_nr, trap_code, trap_errno, trap_arch_ok, trap_addr_ok, trap_rax);
}

static void case_trap_blocked(void) {
    struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
    sigaction(SIGSYS, &sa, NULL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGSYS);
    sigprocmask(SIG_BLOCK, &s, NULL);
    nnp();
    deny(SYS_uname, SECCOMP_RET_TRAP, 0);
    struct utsname u;
    syscall(SYS_uname, &u);
    printf("  still here\n");
}

static void case_kill_process(void) {
    nnp();
    deny(SYS_getppid, SECCOMP_RET_KILL_PROCESS, 0);
    syscall(SYS_getppid);
    printf("  still here\n");
}

static void case_kill_thread_alone(void) {
    nnp();
    deny(SYS_getppid, SECCOMP_RET_KILL_THREAD, 0);
    syscall(SYS_getppid);
    printf("  still here\n");
}

static void *killed_thread(void *arg) {
    syscall(SYS_getppid);
    return (void *)1;
}

static void case_kill_thread_of_two(void) {
    nnp();
    deny(SYS_getppid, SECCOMP_RET_KILL_THREAD, 0);
    pthread_t t;
    void *ret = NULL;
    pthread_create(&t, NULL, killed_thread, NULL);
    pthread_join(t, &ret);
    printf("  joined the killed thread (it returned nothing: %d); the process goes on\n", ret == NULL);
}

static void case_strict(void) {
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT) != 0) {
        printf("  strict refused: %d\n", errno);
        return;
    }
    static const char msg[] = "  in strict mode: write works\n";
    write(1, msg, sizeof msg - 1);
    syscall(SYS_getpid);
    write(1, "  still here\n", 13);
}

static void case_argument(void) {
    nnp();
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_write, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_OFF),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 2, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    show("install", install(f, 6, 0));
    show("write to 2", write(2, "x\n", 2));
    show("write to 1", write(1, "  (written to 1)\n", 17));
}

static void case_precedence(void) {
    nnp();
    deny(SYS_getppid, SECCOMP_RET_ERRNO | 5, 0);
    deny(SYS_getppid, SECCOMP_RET_ERRNO | 6, 0); /* newer, same action: its data */
    show("getppid (ERRNO 5 then ERRNO 6)", syscall(SYS_getppid));
    deny(SYS_getppid, SECCOMP_RET_ALLOW, 0); /* less restrictive: no change */
    show("getppid (+ ALLOW)", syscall(SYS_getppid));
    deny(SYS_getpgrp, SECCOMP_RET_TRACE, 0);
    show("getpgrp (TRACE, no tracer)", syscall(SYS_getpgrp));
    deny(SYS_getuid, SECCOMP_RET_USER_NOTIF, 0);
    show("getuid (USER_NOTIF, no listener)", syscall(SYS_getuid));
    deny(SYS_getgid, SECCOMP_RET_LOG, 0);
    show("getgid (LOG) >= 0", syscall(SYS_getgid) >= 0);
    deny(SYS_getegid, SECCOMP_RET_ERRNO | 0, 0);
    show("getegid (ERRNO 0)", syscall(SYS_getegid));
    status_lines();
}

static pthread_barrier_t bar;

static void *sync_thread(void *arg) {
    pthread_barrier_wait(&bar); /* the filter goes on meanwhile */
    pthread_barrier_wait(&bar);
    long r = syscall(SYS_getppid);
    return (void *)(r < 0 ? (long)-errno : r);
}

static void *later_thread(void *arg) {
    long r = syscall(SYS_getppid);
    return (void *)(r < 0 ? (long)-errno : r);
}

static void case_tsync(void) {
    nnp();
    pthread_barrier_init(&bar, NULL, 2);
    pthread_t t, u;
    pthread_create(&t, NULL, sync_thread, NULL);
    pthread_barrier_wait(&bar);
    show("TSYNC install", deny(SYS_getppid, SECCOMP_RET_ERRNO | 7, SECCOMP_FILTER_FLAG_TSYNC));
    pthread_barrier_wait(&bar);
    void *r;
    pthread_join(t, &r);
    printf("  the other thread's getppid: %ld\n", (long)r);
    pthread_create(&u, NULL, later_thread, NULL);
    pthread_join(u, &r);
    printf("  a later thread's getppid: %ld\n", (long)r);
    status_lines();
    /* A thread with a filter of its own that is not the caller's ancestor: TSYNC names it. */
    pthread_barrier_init(&bar, NULL, 2);
}

static void *own_filter_thread(void *arg) {
    deny(SYS_getpgrp, SECCOMP_RET_ERRNO | 9, 0);
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    return (void *)syscall(SYS_gettid);
}

static void case_tsync_conflict(void) {
    nnp();
    pthread_barrier_init(&bar, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, own_filter_thread, NULL);
    pthread_barrier_wait(&bar);
    long r = deny(SYS_getppid, SECCOMP_RET_ERRNO | 7, SECCOMP_FILTER_FLAG_TSYNC);
    long esrch = deny(SYS_getppid, SECCOMP_RET_ERRNO | 7, SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_TSYNC_ESRCH);
    pthread_barrier_wait(&bar);
    void *tid;
    pthread_join(t, &tid);
    printf("  TSYNC answered the other thread's tid: %d; with TSYNC_ESRCH: %ld\n", r == (long)tid, esrch);
    show("getppid here works (not installed)", syscall(SYS_getppid) > 0);
}

static void case_refused(void) {
    nnp();
    struct sock_filter ret_allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    struct sock_filter byte_load[] = {BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 0), ret_allow};
    struct sock_filter past_data[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 64), ret_allow};
    struct sock_filter unaligned[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 2), ret_allow};
    struct sock_filter far_jump[] = {BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), ret_allow};
    struct sock_filter no_ret[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 0)};
    struct sock_filter div_zero[] = {BPF_STMT(BPF_ALU | BPF_DIV | BPF_K, 0), ret_allow};
    struct sock_filter shift_32[] = {BPF_STMT(BPF_ALU | BPF_LSH | BPF_K, 32), ret_allow};
    struct sock_filter unset_mem[] = {BPF_STMT(BPF_LD | BPF_MEM, 3), ret_allow};
    struct sock_filter mod_op[] = {BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, 3), ret_allow};
    struct sock_filter set_mem[] = {BPF_STMT(BPF_ST, 3), BPF_STMT(BPF_LDX | BPF_MEM, 3), BPF_STMT(BPF_MISC | BPF_TXA, 0),
                                    BPF_STMT(BPF_ALU | BPF_OR | BPF_K, SECCOMP_RET_ALLOW), BPF_STMT(BPF_RET | BPF_A, 0)};
    printf("  length 0: %ld\n", install(&ret_allow, 0, 0));
    printf("  byte load: %ld\n", install(byte_load, 2, 0));
    printf("  load past the data: %ld\n", install(past_data, 2, 0));
    printf("  unaligned load: %ld\n", install(unaligned, 2, 0));
    printf("  jump past the end: %ld\n", install(far_jump, 2, 0));
    printf("  no return at the end: %ld\n", install(no_ret, 1, 0));
    printf("  division by 0: %ld\n", install(div_zero, 2, 0));
    printf("  shift by 32: %ld\n", install(shift_32, 2, 0));
    printf("  scratch read before written: %ld\n", install(unset_mem, 2, 0));
    printf("  modulo (not for seccomp): %ld\n", install(mod_op, 2, 0));
    printf("  unknown flag: %ld\n", install(&ret_allow, 1, 1u << 20));
    long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, NULL);
    printf("  no program: %ld errno %d\n", r, errno);
    struct sock_fprog bad = {.len = 1, .filter = (void *)8};
    r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &bad);
    printf("  program at a bad address: %ld errno %d\n", r, errno);
    r = syscall(SYS_seccomp, SECCOMP_SET_MODE_STRICT, 1, NULL);
    printf("  strict with flags: %ld errno %d\n", r, errno);
    unsigned action = SECCOMP_RET_LOG;
    printf("  LOG available: %ld\n", syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action));
    action = 0x12340000;
    r = syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action);
    printf("  0x12340000 available: %ld errno %d\n", r, errno);
    printf("  scratch written then read, TXA, OR, RET A: %ld\n", install(set_mem, 5, 0));
    show("PR_GET_SECCOMP", prctl(PR_GET_SECCOMP, 0, 0, 0, 0));
    r = prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT);
    printf("  strict after a filter: %ld errno %d\n", r, errno);
}

static void case_host_programs(void) {
    fflush(stdout);
    nnp();
    deny(SYS_uname, SECCOMP_RET_ERRNO | EPERM, 0);
    int s = system("uname -s 2>&1; echo \"  uname from system(): $?\"");
    printf("  system: %d\n", WEXITSTATUS(s));
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        execl("/bin/sh", "sh", "-c", "uname -s 2>&1; echo \"  uname after fork + exec: $?\"", (char *)NULL);
        _exit(99);
    }
    waitpid(p, &s, 0);
    printf("  fork + exec: %d\n", WEXITSTATUS(s));
    fflush(stdout);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n < 0 ? 0 : n] = 0;
    execl(self, self, "after-exec", (char *)NULL);
    printf("  exec failed: %d\n", errno);
}

/* Installs one-instruction filters (or `ld_first`: a load, then the return) until the kernel
 * refuses; how many it took (Linux's limit counts each filter's converted length, +4). */
static int fill(int ld_first) {
    struct sock_filter one[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_filter two[] = {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    int n = 0;
    while ((ld_first ? install(two, 2, 0) : install(one, 1, 0)) == 0)
        n++;
    return n;
}

static void *filling_thread(void *arg) {
    return (void *)(long)fill(0);
}

static void *big_filter_thread(void *arg) {
    static struct sock_filter big[4096];
    for (int i = 0; i < 4095; i++)
        big[i] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF);
    big[4095] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
    return (void *)install(big, 4096, 0);
}

/* Long chains and many filters: a thread that fills its chain to the limit and exits (the
 * chain goes with it), threads that each install a 4,096-instruction filter and exit (their
 * filters are given back), and the limit counted as Linux counts it. */
static void case_many(void) {
    nnp();
    pthread_t t;
    void *r;
    pthread_create(&t, NULL, filling_thread, NULL);
    pthread_join(t, &r);
    printf("  a thread installed %ld filters, then ended\n", (long)r);
    int ok = 0;
    for (int i = 0; i < 300; i++) {
        pthread_create(&t, NULL, big_filter_thread, NULL);
        pthread_join(t, &r);
        ok += r == NULL;
    }
    printf("  300 threads each installed a 4096-instruction filter: %d succeeded\n", ok);
    printf("  two-instruction filters until refused: %d\n", fill(1));
    printf("  then one-instruction ones: %d\n", fill(0));
}

/* A sandbox that refuses `clone` (as some refuse it for its flags) leaves glibc's clone3. */
static void case_clone_refused(void) {
    nnp();
    deny(SYS_clone, SECCOMP_RET_ERRNO | EAGAIN, 0);
    int s = system("echo \"  system() without clone\"");
    printf("  system: %d\n", WEXITSTATUS(s));
}

static void after_exec(void) {
    struct utsname u;
    show("  uname in the exec'd program", uname(&u));
    show("  PR_GET_SECCOMP", prctl(PR_GET_SECCOMP, 0, 0, 0, 0));
}

static void run_case(const char *name, void (*fn)(void)) {
    printf("%s:\n", name);
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        fn();
        fflush(stdout);
        _exit(0);
    }
    int s;
    waitpid(p, &s, 0);
    if (WIFSIGNALED(s))
        printf("  -> killed by signal %d\n", WTERMSIG(s));
    else
        printf("  -> exit %d\n", WEXITSTATUS(s));
}

int main(int argc, char **argv) {
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 1 && strcmp(argv[1], "after-exec") == 0) {
        after_exec();
        return 0;
    }
    run_case("errno", case_errno);
    run_case("trap", case_trap);
    run_case("trap while blocked", case_trap_blocked);
    run_case("kill process", case_kill_process);
    run_case("kill thread, alone", case_kill_thread_alone);
    run_case("kill thread, one of two", case_kill_thread_of_two);
    run_case("strict", case_strict);
    run_case("argument", case_argument);
    run_case("precedence", case_precedence);
    run_case("tsync", case_tsync);
    run_case("tsync conflict", case_tsync_conflict);
    run_case("refused", case_refused);
    run_case("many filters", case_many);
    run_case("clone refused", case_clone_refused);
    run_case("host programs", case_host_programs);
    show("no filter here: PR_GET_SECCOMP", prctl(PR_GET_SECCOMP, 0, 0, 0, 0));
    status_lines();
    return 0;
}
