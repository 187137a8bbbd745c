/* The HRT vDSO: clock_gettime, gettimeofday, time and getcpu answered in the program from the
 * TSC and a data page the kernel fills (`struct hrt_vvar`, the page just below this image),
 * without entering the kernel. Built by kernel/build.rs as a tiny shared object; the kernel
 * maps it into the program and passes its address in AT_SYSINFO_EHDR. Must match
 * kernel/src/linux/vdso.rs. */
#include <stdint.h>

struct hrt_vvar {
    uint64_t boot_tsc;  /* TSC at the kernel's time zero */
    uint64_t ns_mult;   /* ns = (ticks * ns_mult) >> 32 */
    uint64_t wall_ns;   /* CLOCK_REALTIME at time zero */
    uint64_t rdtscp;    /* 1: TSC_AUX holds cpu | node << 12; 2: GS holds the kernel's per-CPU
                           record (the kernel runs in ring 3), cpu at gs:8, node at gs:72 */
    uint64_t mono_ns;   /* CLOCK_MONOTONIC at time zero (the host's) */
    uint64_t boot_ns;   /* CLOCK_BOOTTIME at time zero (the host's) */
    uint64_t raw_ns;    /* CLOCK_MONOTONIC_RAW at time zero (the host's) */
};

extern const struct hrt_vvar hrt_vvar __attribute__((visibility("hidden")));

struct hrt_timespec { long tv_sec; long tv_nsec; };
struct hrt_timeval { long tv_sec; long tv_usec; };

/* LFENCE first, as Linux's rdtsc_ordered: a bare RDTSC may run before an earlier load, and a
 * thread that reads another's time stamp and then the clock could see time go back. */
static inline uint64_t rdtsc(void) {
    uint32_t lo, hi;
    __asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) :: "memory");
    return ((uint64_t)hi << 32) | lo;
}

static inline uint64_t elapsed_ns(void) {
    const volatile struct hrt_vvar *v = &hrt_vvar;
    return (uint64_t)(((unsigned __int128)(rdtsc() - v->boot_tsc) * v->ns_mult) >> 32);
}

/* A system call with its number as an immediate right before the SYSCALL, the pair 16-byte
 * aligned: the kernel rewrites such a site into a call with one 8-byte store, which must not
 * cross a cache line (linux/rewrite.rs, `patch_at`). Left where the compiler put it, the
 * CPU-clock site of clock_gettime straddled one and stayed SYSCALL: every clock() took ~33 us
 * on a PVM host against ~0.3 us through the call. */
#define SYS2(nr, a, b)                                                                        \
    ({                                                                                        \
        long r_;                                                                              \
        __asm__ volatile(".p2align 4\n\tmovl $" #nr ", %%eax\n\tsyscall"                     \
                         : "=a"(r_)                                                           \
                         : "D"(a), "S"(b)                                                     \
                         : "rcx", "r11", "memory");                                           \
        r_;                                                                                   \
    })

#define SYS3(nr, a, b, c)                                                                     \
    ({                                                                                        \
        long r_;                                                                              \
        __asm__ volatile(".p2align 4\n\tmovl $" #nr ", %%eax\n\tsyscall"                     \
                         : "=a"(r_)                                                           \
                         : "D"(a), "S"(b), "d"(c)                                             \
                         : "rcx", "r11", "memory");                                           \
        r_;                                                                                   \
    })

int __vdso_clock_gettime(int clock, struct hrt_timespec *ts) {
    uint64_t ns;
    switch (clock) {
    case 0: /* REALTIME */
    case 5: /* REALTIME_COARSE */
        ns = hrt_vvar.wall_ns + elapsed_ns();
        break;
    case 1: /* MONOTONIC */
    case 6: /* MONOTONIC_COARSE */
        ns = hrt_vvar.mono_ns + elapsed_ns();
        break;
    case 4: /* MONOTONIC_RAW */
        ns = hrt_vvar.raw_ns + elapsed_ns();
        break;
    case 7: /* BOOTTIME */
        ns = hrt_vvar.boot_ns + elapsed_ns();
        break;
    default:
        return (int)SYS2(228, clock, (long)ts);
    }
    ts->tv_sec = (long)(ns / 1000000000u);
    ts->tv_nsec = (long)(ns % 1000000000u);
    return 0;
}

int __vdso_gettimeofday(struct hrt_timeval *tv, void *tz) {
    if (tz)
        return (int)SYS2(96, (long)tv, (long)tz);
    if (tv) {
        uint64_t ns = hrt_vvar.wall_ns + elapsed_ns();
        tv->tv_sec = (long)(ns / 1000000000u);
        tv->tv_usec = (long)((ns % 1000000000u) / 1000u);
    }
    return 0;
}

long __vdso_time(long *t) {
    long s = (long)((hrt_vvar.wall_ns + elapsed_ns()) / 1000000000u);
    if (t)
        *t = s;
    return s;
}

/* Linux's vDSO has it (rustix and glibc look it up); the kernel's answer, which knows each
 * clock's resolution. */
int __vdso_clock_getres(int clock, struct hrt_timespec *res) {
    return (int)SYS2(229, clock, (long)res);
}

int __vdso_getcpu(unsigned *cpu, unsigned *node, void *unused) {
    if (!hrt_vvar.rdtscp)
        return (int)SYS3(309, (long)cpu, (long)node, (long)unused);
    if (hrt_vvar.rdtscp == 2) {
        /* RDTSCP would give the host's CPU on a PVM host. */
        uint64_t c, n;
        __asm__ volatile("mov %%gs:8, %0" : "=r"(c));
        __asm__ volatile("mov %%gs:72, %0" : "=r"(n));
        if (cpu)
            *cpu = (unsigned)c;
        if (node)
            *node = (unsigned)n;
        return 0;
    }
    uint32_t lo, hi, aux;
    __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
    if (cpu)
        *cpu = aux & 0xfff;
    if (node)
        *node = aux >> 12;
    return 0;
}

int clock_gettime(int, struct hrt_timespec *) __attribute__((weak, alias("__vdso_clock_gettime")));
int gettimeofday(struct hrt_timeval *, void *) __attribute__((weak, alias("__vdso_gettimeofday")));
long time(long *) __attribute__((weak, alias("__vdso_time")));
int getcpu(unsigned *, unsigned *, void *) __attribute__((weak, alias("__vdso_getcpu")));
int clock_getres(int, struct hrt_timespec *) __attribute__((weak, alias("__vdso_clock_getres")));
