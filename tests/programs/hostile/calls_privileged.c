// Values that would reach a privileged register (FS base) or a kernel pointer (futex words,
// robust lists, the clear-tid address, sigaltstack, timeouts): Linux refuses them with EPERM,
// EFAULT or EINVAL and carries on. `stack` and `kstack` start a thread on a junk stack, which
// dies of SIGSEGV and takes the process with it (139).
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define ARCH_SET_FS 0x1002
#define ARCH_GET_FS 0x1003

static const uint64_t junk[] = {0x8000000000000000ull, 0xffffffff81000000ull, 0x00007ffffffff000ull, 0xfffffffffffff000ull};

static void report(const char *what, uint64_t v, long r) {
    if (r < 0)
        printf("%s %#llx: -1 errno %d\n", what, (unsigned long long)v, errno);
    else
        printf("%s %#llx: %ld\n", what, (unsigned long long)v, r);
    fflush(stdout);
}

static char child_stack[65536] __attribute__((aligned(16)));

/* A page-aligned user address with nothing mapped there (mapped, then unmapped). */
static void *junk_page(void) {
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || munmap(p, 4096) != 0) {
        perror("mmap/munmap");
        return NULL;
    }
    return p;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "all";
    const long thread = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
    if (!strcmp(mode, "stack") || !strcmp(mode, "kstack")) {
        uint64_t sp = !strcmp(mode, "stack") ? junk[0] : junk[1];
        long r = syscall(SYS_clone, thread, sp, NULL, NULL, 0);
        if (r < 0)
            report("clone with a junk stack", sp, r);
        // The child dies at once (and the process with it); a correct run never gets here.
        struct timespec t = {10, 0};
        nanosleep(&t, NULL);
        return 0;
    }
    for (int i = 0; i < 4; i++) {
        report("arch_prctl(ARCH_SET_FS)", junk[i], syscall(SYS_arch_prctl, ARCH_SET_FS, junk[i]));
        report("clone(CLONE_SETTLS)", junk[i],
               syscall(SYS_clone, thread | CLONE_SETTLS, child_stack + sizeof child_stack, NULL, NULL, junk[i]));
        report("futex wake", junk[i], syscall(SYS_futex, junk[i], FUTEX_WAKE, 1, NULL, NULL, 0));
        report("futex wait", junk[i], syscall(SYS_futex, junk[i], FUTEX_WAIT, 0, NULL, NULL, 0));
        report("futex requeue to it", junk[i],
               syscall(SYS_futex, &errno, FUTEX_CMP_REQUEUE, 1, 1, junk[i], errno));
        report("get_robust_list into it", junk[i], syscall(SYS_get_robust_list, 0, junk[i], junk[i]));
        report("sigaltstack from it", junk[i], syscall(SYS_sigaltstack, junk[i], NULL));
        report("sigaltstack into it", junk[i], syscall(SYS_sigaltstack, NULL, junk[i]));
        report("rt_sigaction from it", junk[i], syscall(SYS_rt_sigaction, SIGUSR1, junk[i], NULL, 8));
        report("nanosleep from it", junk[i], syscall(SYS_nanosleep, junk[i], NULL));
        report("clock_gettime into it", junk[i], syscall(SYS_clock_gettime, CLOCK_MONOTONIC, junk[i]));
        report("prctl(PR_SET_NAME) from it", junk[i], syscall(SYS_prctl, PR_SET_NAME, junk[i], 0, 0, 0));
        report("sched_setaffinity from it", junk[i], syscall(SYS_sched_setaffinity, 0, 8, junk[i]));
    }
    uint64_t fs = 0;
    report("arch_prctl(ARCH_GET_FS)", 0, syscall(SYS_arch_prctl, ARCH_GET_FS, &fs));
    report("arch_prctl(ARCH_SET_FS) to its own value", 0, syscall(SYS_arch_prctl, ARCH_SET_FS, fs));
    int word = 0;
    struct timespec forever = {INT64_MAX, 999999999};
    report("futex wait, huge timeout, other value", 0, syscall(SYS_futex, &word, FUTEX_WAIT, 1, &forever, NULL, 0));
    report("futex wait_bitset, huge absolute timeout, other value", 0,
           syscall(SYS_futex, &word, FUTEX_WAIT_BITSET, 1, &forever, NULL, -1));
    struct timespec bad = {0, 2000000000};
    report("nanosleep with tv_nsec 2e9", 0, syscall(SYS_nanosleep, &bad, NULL));
    struct timespec neg = {-1, 0};
    report("nanosleep with tv_sec -1", 0, syscall(SYS_nanosleep, &neg, NULL));
    static char alt[16384];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0}, got;
    report("sigaltstack set", 0, sigaltstack(&ss, NULL));
    report("sigaltstack get", 0, sigaltstack(NULL, &got));
    printf("alt stack: same sp %d, size %zu, flags %d\n", got.ss_sp == alt, got.ss_size, got.ss_flags);
    ss.ss_size = 1000;
    report("sigaltstack too small", 0, sigaltstack(&ss, NULL));
    ss.ss_size = sizeof alt;
    ss.ss_flags = 12345;
    report("sigaltstack bad flags", 0, sigaltstack(&ss, NULL));
    ss.ss_flags = SS_DISABLE;
    report("sigaltstack disable", 0, sigaltstack(&ss, &got));
    report("sigaltstack get after disable", 0, sigaltstack(NULL, &got));
    printf("alt stack: flags %d\n", got.ss_flags);
    /* A private wake-up never reads the word: Linux checks only its alignment and that it
     * starts in user space (so an unmapped page is fine), and a zero bitset first. */
    const uint64_t unmapped = (uint64_t)junk_page();
    const uint64_t wake_at[] = {junk[0], junk[1], junk[2], junk[3], 0, unmapped, unmapped + 2, 0x7ffffffffffcull};
    for (int i = 0; i < 8; i++) {
        report("private futex wake at", i, syscall(SYS_futex, wake_at[i], FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0));
        report("private futex wake_bitset at", i,
               syscall(SYS_futex, wake_at[i], FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, 1));
        report("private futex wake_bitset 0 at", i,
               syscall(SYS_futex, wake_at[i], FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, 0));
        report("shared futex wake at", i, syscall(SYS_futex, wake_at[i], FUTEX_WAKE, 1, NULL, NULL, 0));
    }
    report("set_robust_list to junk", 0, syscall(SYS_set_robust_list, junk[0], 24));
    report("set_tid_address to junk (returns the tid)", 0, syscall(SYS_set_tid_address, junk[0]) > 0 ? 1 : -1);
    return 0;
}
