// The gaps between the program's ELF segments: built with a large segment alignment
// (-z max-page-size=0x10000), the page-aligned space between one PT_LOAD's end and the next
// one's start lies inside the image. Linux's execve maps each segment on its own and leaves
// the gaps unmapped (so Linux may place its vDSO in one: pages near it are left out). For each
// gap (found from the program headers with dl_iterate_phdr): a read and a write at its first
// page and a read at its last page (SIGSEGV through a handler that siglongjmps back), forwarded and local system calls given a pointer there (EFAULT), and the
// memory calls that tell unmapped from mapped (mincore, mprotect: ENOMEM; munmap: 0), and a
// MAP_FIXED_NOREPLACE mapping placed there (free address space: granted, usable).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "report.h"

static uintptr_t page;

// Whether `p` is at least 16 pages away from the vDSO (Linux maps it with its data pages, at
// most a few pages, in the highest free gap that fits, which may be one of the image's).
static int away_from_vdso(uintptr_t p) {
    uintptr_t vdso = getauxval(AT_SYSINFO_EHDR), margin = 16 * page;
    return !vdso || p + margin <= vdso || p >= vdso + margin;
}

// The lowest (or highest) page of [lo, hi) away from the vDSO; 0 if none.
static uintptr_t pick(uintptr_t lo, uintptr_t hi, int highest) {
    for (uintptr_t i = 0; i < (hi - lo) / page; i++) {
        uintptr_t p = highest ? hi - (i + 1) * page : lo + i * page;
        if (away_from_vdso(p))
            return p;
    }
    return 0;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    probe_setup();
    page = (uintptr_t)sysconf(_SC_PAGESIZE);
    int zero = open("/dev/zero", O_RDONLY), fds[2];
    if (pipe(fds))
        return 1;
    struct phdrs ph = own_phdrs();
    uintptr_t prev_end = 0;
    int gaps = 0;
    for (int i = 0; i < ph.n; i++) {
        const ElfW(Phdr) *p = &ph.phdr[i];
        if (p->p_type != PT_LOAD)
            continue;
        uintptr_t start = ph.base + p->p_vaddr;
        uintptr_t lo = (prev_end + page - 1) & ~(page - 1), hi = start & ~(page - 1);
        prev_end = start + p->p_memsz;
        if (!lo || lo >= hi)
            continue;
        char what[64];
        unsigned char *gap = (unsigned char *)pick(lo, hi, 0), *last = (unsigned char *)pick(lo, hi, 1);
        printf("gap %d: %lu pages\n", gaps, (unsigned long)((hi - lo) / page));
        if (!gap) {
            printf("gap %d: every page is near the vDSO\n", gaps++);
            continue;
        }
        snprintf(what, sizeof what, "gap %d first page", gaps);
        probe(what, gap, 0);
        probe(what, gap, 1);
        snprintf(what, sizeof what, "gap %d last page", gaps);
        probe(what, last, 0);
        report("  write from the gap", write(fds[1], gap, 16));
        report("  read into the gap", read(zero, gap, 16));
        report("  clock_gettime into the gap", syscall(SYS_clock_gettime, CLOCK_MONOTONIC, gap));
        unsigned char vec[1];
        report("  mincore", mincore(gap, page, vec));
        report("  mprotect", mprotect(gap, page, PROT_READ));
        report("  munmap", munmap(gap, page));
        probe("  after munmap", gap, 0);
        void *m = mmap(gap, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        printf("  mmap MAP_FIXED_NOREPLACE: %s\n", m == gap ? "at the gap" : m == MAP_FAILED ? "failed" : "elsewhere");
        if (m == gap) {
            probe("  mapped", gap, 1);
            report("  munmap it", munmap(gap, page));
        }
        gaps++;
    }
    printf("gaps: %d\n", gaps);
    return 0;
}
