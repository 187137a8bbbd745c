/* The processor topology CPUID describes, as hwloc's x86 backend and other core counters read
 * it, checked against the CPUs the system says it has: leaf 0xB's levels (threads, then cores
 * or more) cover every CPU, each CPU's x2APIC ID is its own, leaf 1's count covers them, and on
 * AMD leaf 0x8000001E's extended APIC ID is the x2APIC ID and 0x80000008 counts the cores.
 * Under hrt on a PVM host, whose KVM leaves those leaves empty, leaf 0xB had no levels and
 * 0x8000001E read zero on every vCPU: `HWLOC_COMPONENTS=-linux lstopo` failed ("Invalid
 * argument"). Prints only whether each check holds, so that any machine's answer is "yes". */
#define _GNU_SOURCE
#include <cpuid.h>
#include <sched.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
    unsigned a, b, c, d, max;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    __cpuid(0, max, b, c, d);
    int amd = b == 0x68747541; /* "Auth" */
    if (max < 0xb) {
        printf("no leaf 0xB\n");
        return 0;
    }
    unsigned ids[256];
    int covered = 1, own_ids = 1, ext_ids = 1, levels_ok = 1, seen = 0;
    for (long cpu = 0; cpu < cpus && cpu < 256; cpu++) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            continue;
        /* The last level's count is the package's logical processors. */
        unsigned logical = 0, level, x2apic = 0;
        for (level = 0; level < 8; level++) {
            __cpuid_count(0xb, level, a, b, c, d);
            unsigned type = (c >> 8) & 0xff;
            if (type == 0)
                break;
            if ((c & 0xff) != level || (b & 0xffff) == 0)
                levels_ok = 0;
            logical = b & 0xffff;
            x2apic = d;
        }
        if (level < 2)
            levels_ok = 0; /* threads and at least cores */
        if (logical < 1)
            covered = 0;
        for (int i = 0; i < seen; i++)
            if (ids[i] == x2apic)
                own_ids = 0;
        ids[seen++] = x2apic;
        if (amd) {
            unsigned ea, eb, ec, ed;
            __cpuid(0x80000000, ea, eb, ec, ed);
            if (ea >= 0x8000001e) {
                __cpuid(0x8000001e, ea, eb, ec, ed);
                if (ea != x2apic)
                    ext_ids = 0;
            }
        }
    }
    /* Every CPU in one of the packages leaf 0xB describes: count packages by APIC ID bits. */
    __cpuid_count(0xb, 1, a, b, c, d);
    unsigned shift = a & 0x1f, per_package = b & 0xffff;
    int packages = 0;
    unsigned seen_packages[256];
    for (int i = 0; i < seen; i++) {
        unsigned p = shift < 32 ? ids[i] >> shift : 0;
        int known = 0;
        for (int j = 0; j < packages; j++)
            known |= seen_packages[j] == p;
        if (!known && packages < 256)
            seen_packages[packages++] = p;
    }
    if ((long)packages * per_package < cpus)
        covered = 0;
    __cpuid(1, a, b, c, d);
    int leaf1 = ((b >> 16) & 0xff) * (unsigned)packages >= (unsigned)cpus || cpus == 1;
    int nc = 1;
    if (amd) {
        __cpuid(0x80000008, a, b, c, d);
        nc = (long)((c & 0xff) + 1) * packages >= cpus;
    }
    printf("cpus looked at: all %s\n", seen == cpus ? "yes" : "no");
    printf("leaf 0xB has thread and core levels: %s\n", levels_ok ? "yes" : "no");
    printf("leaf 0xB's levels cover every CPU: %s\n", covered ? "yes" : "no");
    printf("every CPU has its own x2APIC ID: %s\n", own_ids ? "yes" : "no");
    printf("leaf 1 counts them: %s\n", leaf1 ? "yes" : "no");
    printf("AMD's extended APIC ID is the x2APIC ID: %s\n", ext_ids ? "yes" : "no");
    printf("AMD's core count covers them: %s\n", nc ? "yes" : "no");
    return 0;
}
