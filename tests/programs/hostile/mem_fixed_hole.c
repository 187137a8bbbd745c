// MAP_FIXED and friends at addresses in the hole a PC leaves below 4 GiB (3 GiB to 4 GiB, where
// the IOAPIC and local APIC live). Linux maps them like any free address; under hrt the
// program's addresses are guest-physical, so nothing can be mapped there: such a request must
// fail as a whole (ENOMEM) without touching anything, and the calls that do not create memory
// must answer as on Linux. Lines starting "map in the hole" are the requests Linux grants.
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "report.h"

#define HOLE 0xc0000000UL
#define APIC 0xfee00000UL
#define PAGE 4096UL

static sigjmp_buf env;

static void on_segv(int sig) {
    (void)sig;
    siglongjmp(env, 1);
}

// Whether a store at `addr` works (rather than raising SIGSEGV).
static int stores(uintptr_t addr) {
    if (sigsetjmp(env, 1) == 0) {
        *(volatile char *)addr = 1;
        return 1;
    }
    return 0;
}

static long map(uintptr_t addr, size_t len, int flags) {
    void *p = mmap((void *)addr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    return (uintptr_t)p == addr ? 0 : 1; // 1: placed elsewhere (a hint)
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGSEGV, on_segv);
    // Nothing is mapped in the hole to begin with.
    report("mprotect in the hole", mprotect((void *)HOLE, PAGE, PROT_READ));
    report("munmap in the hole", munmap((void *)HOLE, PAGE));
    report("mremap from the hole", (long)mremap((void *)HOLE, PAGE, 2 * PAGE, MREMAP_MAYMOVE));
    // A hint in the hole is only a hint.
    report("hint in the hole", map(HOLE, PAGE, 0) >= 0 ? 0 : -1);
    // The requests Linux grants.
    report("map in the hole, fixed at its start", map(HOLE, PAGE, MAP_FIXED));
    report("map in the hole, fixed_noreplace at the local APIC", map(APIC, PAGE, MAP_FIXED_NOREPLACE));
    // Memory right below the hole (the last page of RAM below 4 GiB under hrt), holding data,
    // then a MAP_FIXED from there into the hole: Linux replaces the page with zeros, hrt must
    // refuse the whole request and keep the page as it was.
    long below = map(HOLE - PAGE, PAGE, MAP_FIXED_NOREPLACE);
    report("fixed_noreplace below the hole", below);
    if (below == 0) {
        memset((void *)(HOLE - PAGE), 'x', PAGE);
        long r = map(HOLE - PAGE, 2 * PAGE, MAP_FIXED);
        report("map in the hole, fixed from the page below", r);
        // Whatever the answer, it must be the whole truth: granted, the page reads zero and the
        // hole's page takes a store; refused, both are as before.
        char c = *(volatile char *)(HOLE - PAGE);
        printf("page below the hole as the answer says: %s\n", c == (r == 0 ? 0 : 'x') ? "yes" : "no");
        printf("page in the hole as the answer says: %s\n", stores(HOLE) == (r == 0) ? "yes" : "no");
        munmap((void *)(HOLE - PAGE), 2 * PAGE);
    }
    return 0;
}
