/* AVX-512 state across thread switches and signal handlers: four threads share the vCPUs (run
 * with --cpus 1) and each keeps its own patterns in all 512 bits of zmm0-zmm31 and in the
 * opmask registers k0-k7 while it gives the CPU away, then checks every bit:
 *   yield    sched_yield
 *   futex    a futex wait that times out (the thread blocks; another one runs)
 *   preempt  spins until a timer interrupt preempts it (hrt run --preempt)
 *   signal   sends itself SIGUSR1; the handler fills every zmm and k register with its own
 *            pattern, and rt_sigreturn must bring the thread's back (Linux keeps the whole
 *            XSAVE state in the signal frame)
 *   fault    executes ud2; the SIGILL handler clobbers the same way and skips the instruction
 *   kick     spins while the main thread sends it SIGUSR1 (pthread_kill), so the signal
 *            arrives on an interrupt (run with --cpus 2)
 * (fault and kick frames are built where the kernel took the exception or interrupt: in ring
 * 0 on a PVM host, whose vector state must still reach the frame.)
 * A switch or a signal frame that keeps only x87/SSE/AVX hands each thread the other's (or the
 * handler's) zmm upper halves, zmm16-31 and k registers. Without AVX-512 the program says so
 * and checks nothing (natively and under hrt alike). It asks the CPU itself (CPUID leaf 7 and
 * XCR0 through XGETBV), not libgcc's __builtin_cpu_supports, which also wants CPUID's OSXSAVE
 * bit: on PVM hosts KVM shows that bit only while the guest's own CR4 has it, which the
 * ring-3 kernel never sets, although XSAVE and AVX-512 run there on the host's CR4 and XCR0. */
#define _GNU_SOURCE
#include <cpuid.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "handler.h"

enum { THREADS = 4, ZMM_BYTES = 32 * 64 };

/* What the registers are loaded from and stored to: zmm0-31, then k0-7. */
struct regs {
    uint8_t zmm[ZMM_BYTES];
    uint64_t k[8];
} __attribute__((aligned(64)));

static long wrong[THREADS];
static int never_changes;

#define ZMM_LOAD(n) "vmovdqu64 " #n "*64(%[in]), %%zmm" #n "\n"
#define ZMM_STORE(n) "vmovdqu64 %%zmm" #n ", " #n "*64(%[out])\n"
#define K_LOAD(n) "kmovq " #n "*8+2048(%[in]), %%k" #n "\n"
#define K_STORE(n) "kmovq %%k" #n ", " #n "*8+2048(%[out])\n"
#define ZMM_ALL(M)                                                                                              \
    M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15) M(16) M(17) M(18)    \
        M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31)
#define K_ALL(M) M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7)
#define VECTOR_CLOBBERS                                                                                         \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12",     \
        "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",        \
        "xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31", "k0", "k1", "k2", "k3", "k4",     \
        "k5", "k6", "k7"

enum { SPIN = -1, UD2 = -2 };

/* Loads every zmm and k register from `in`, then makes system call `nr` (arguments a0, a1, a2,
 * a3), spins `spins` times (SPIN) or executes ud2 (UD2), and stores the registers to `out`. */
static void round_trip(const struct regs *in, struct regs *out, long nr, long a0, long a1, long a2, long a3,
                       long spins) {
    register long r10 __asm__("r10") = a3;
    __asm__ volatile(ZMM_ALL(ZMM_LOAD) K_ALL(K_LOAD) "cmp $-2, %[nr]\n jne 1f\n ud2\n jmp 3f\n"
                                                     "1: test %[nr], %[nr]\n js 2f\n"
                                                     "mov %[nr], %%rax\n syscall\n jmp 3f\n"
                                                     "2: dec %[spins]\n jnz 2b\n"
                                                     "3:\n" ZMM_ALL(ZMM_STORE) K_ALL(K_STORE) "vzeroupper\n"
                     : [spins] "+r"(spins), "+r"(r10)
                     : [in] "r"(in), [out] "r"(out), [nr] "r"(nr), "D"(a0), "S"(a1), "d"(a2)
                     : "rax", "rcx", "r11", "memory", VECTOR_CLOBBERS);
}

/* The handler overwrites every vector and mask register; the interrupted thread must not see it. */
static void clobber(int sig) {
    (void)sig;
    static struct regs junk;
    memset(&junk, 0xa5, sizeof junk);
    __asm__ volatile(ZMM_ALL(ZMM_LOAD) K_ALL(K_LOAD)::[in] "r"(&junk) : "memory", VECTOR_CLOBBERS);
}

/* SIGILL from ud2: clobbers like `clobber`, then resumes after the 2-byte instruction. */
static void skip_ud2(int sig, siginfo_t *info, void *ucontext) {
    (void)info;
    clobber(sig);
    ((ucontext_t *)ucontext)->uc_mcontext.gregs[REG_RIP] += 2;
}

static const char *mode;
static volatile int finished;

static void *worker(void *arg) {
    long id = (long)arg;
    static __thread struct regs in, out;
    struct timespec wait = {0, 200 * 1000};
    int rounds = !strcmp(mode, "preempt") ? 12 : !strcmp(mode, "kick") ? 60 : 150;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < ZMM_BYTES; i++)
            in.zmm[i] = (uint8_t)(id * 131 + r * 7 + i * 3 + (i >> 8));
        for (int i = 0; i < 8; i++)
            in.k[i] = 0x0123456789abcdefull * (uint64_t)(id + 1) + (uint64_t)r * 0x10001 + (uint64_t)i;
        memset(&out, 0, sizeof out);
        if (!strcmp(mode, "yield"))
            round_trip(&in, &out, SYS_sched_yield, 0, 0, 0, 0, 0);
        else if (!strcmp(mode, "futex"))
            round_trip(&in, &out, SYS_futex, (long)&never_changes, FUTEX_WAIT_PRIVATE, 0, (long)&wait, 0);
        else if (!strcmp(mode, "preempt"))
            round_trip(&in, &out, SPIN, 0, 0, 0, 0, 20000000);
        else if (!strcmp(mode, "kick"))
            round_trip(&in, &out, SPIN, 0, 0, 0, 0, 2000000);
        else if (!strcmp(mode, "fault"))
            round_trip(&in, &out, UD2, 0, 0, 0, 0, 0);
        else
            round_trip(&in, &out, SYS_tgkill, getpid(), syscall(SYS_gettid), SIGUSR1, 0, 0);
        wrong[id] += memcmp(&in, &out, sizeof in) != 0;
    }
    __atomic_fetch_add(&finished, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

// AVX-512F and BW (CPUID leaf 7) with their state enabled in XCR0 (opmask, ZMM_Hi256,
// Hi16_ZMM, and SSE and AVX below them).
static int avx512_usable(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 16)) || !(b & (1u << 30)))
        return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 26)))
        return 0; // no XSAVE, so no XGETBV
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 0xe6) == 0xe6;
}

int main(int argc, char **argv) {
    mode = argc > 1 ? argv[1] : "yield";
    if (!avx512_usable()) {
        printf("no AVX-512 here: nothing checked\n");
        return 0;
    }
    set_handler(SIGUSR1, clobber, 0);
    set_info_handler(SIGILL, skip_ud2, 0);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    if (!strcmp(mode, "kick")) {
        struct timespec pause = {0, 300 * 1000};
        while (finished < THREADS) {
            for (int i = 0; i < THREADS; i++)
                pthread_kill(t[i], SIGUSR1);
            nanosleep(&pause, NULL);
        }
    }
    long total = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        total += wrong[i];
    }
    printf("%s: rounds with a wrong zmm or k register: %ld\n", mode, total);
    return total != 0;
}
