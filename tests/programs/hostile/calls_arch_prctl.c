/* arch_prctl's CPUID and extended-state requests as Linux answers them on a CPU without CPUID
 * faulting or AMX (they were all EINVAL under hrt): ARCH_GET_CPUID 1, ARCH_SET_CPUID ENODEV
 * (0 natively on a host with CPUID faulting; the guest's CPU has none),
 * ARCH_GET_XCOMP_SUPP/PERM the components kept per thread (x87 and SSE at least, the same
 * both ways), ARCH_REQ_XCOMP_PERM EOPNOTSUPP (no component needs asking for); an unknown
 * code EINVAL.
 * Usage: calls_arch_prctl */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void show(const char *what, long r) { printf("%-26s %ld %s\n", what, r, r < 0 ? strerrorname_np(errno) : ""); }

int main(void) {
    show("ARCH_GET_CPUID", syscall(SYS_arch_prctl, ARCH_GET_CPUID, 0));
    show("ARCH_SET_CPUID 0", syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0));
    unsigned long supp = 0, perm = 0;
    show("ARCH_GET_XCOMP_SUPP", syscall(SYS_arch_prctl, 0x1021, &supp));
    show("ARCH_GET_XCOMP_PERM", syscall(SYS_arch_prctl, 0x1022, &perm));
    printf("x87 and SSE kept: %d, the same both ways: %d\n", (supp & 3) == 3, supp == perm);
    show("ARCH_REQ_XCOMP_PERM SSE", syscall(SYS_arch_prctl, 0x1023, 1));
    show("ARCH_REQ_XCOMP_PERM AMX", syscall(SYS_arch_prctl, 0x1023, 18));
    show("ARCH_GET_XCOMP_SUPP NULL", syscall(SYS_arch_prctl, 0x1021, NULL));
    show("unknown code", syscall(SYS_arch_prctl, 0x9999, 0));
    return 0;
}
