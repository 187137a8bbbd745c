// Memory calls found different from Linux by a differential fuzzer (stop 100): a PROT_NONE
// mapping that mremap moved or grew became readable and writable (a guard page gone); a
// growth across two protections (two VMAs on Linux) succeeded where Linux says EFAULT;
// mmap checked its arguments in another order (EEXIST before EBADF, EINVAL before EEXIST,
// EOPNOTSUPP before EEXIST), mapped a file MAP_GROWSDOWN or MAP_PRIVATE|MAP_SYNC and refused
// MAP_SHARED_VALIDATE with 0x80; mprotect refused PROT_SEM, checked the protection before an
// empty length and said EINVAL for a hole (ENOMEM); MADV_POPULATE_* over a shared file
// mapping past the file's end was EINVAL (EFAULT); parts of a shared mapping that mprotect
// split stayed apart once their protections agreed again (mremap of the whole: EFAULT);
// MADV_COLD and MADV_PAGEOUT were allowed on locked memory, munlock over a hole unlocked
// nothing. Works in a fresh directory under /tmp.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "handler.h"
#include "scratch.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

#define PG 4096
static sigjmp_buf jump;
static volatile int code;

static void on_fault(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)uc;
    code = si->si_code;
    siglongjmp(jump, 1);
}

static void probe(const char *what, volatile char *p) {
    if (sigsetjmp(jump, 1) == 0) {
        *p = 1;
        printf("%-34s writable\n", what);
    } else {
        printf("%-34s SIGSEGV si_code %d\n", what, code);
    }
}

static void said(const char *what, long failed) {
    printf("%-46s %d\n", what, failed ? -errno : 0);
}

static void mapped(const char *what, void *p) {
    said(what, p == MAP_FAILED);
}

int main(void) {
    char dir[] = "/tmp/hrt-mapping-checks-XXXXXX";
    if (enter_scratch(dir))
        return 1;
    set_info_handler(SIGSEGV, on_fault, SA_NODEFER);
    int anon = MAP_PRIVATE | MAP_ANONYMOUS;
    char *a = mmap(0, PG, PROT_NONE, anon, -1, 0);
    char *b = mremap(a, PG, 8 * PG, MREMAP_MAYMOVE);
    probe("PROT_NONE grown (maybe moved)", b);
    probe("PROT_NONE grown, last page", b + 7 * PG);
    char *c = mmap(0, 2 * PG, PROT_NONE, anon, -1, 0);
    char *d = mremap(c, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED, c + PG);
    probe("PROT_NONE moved", d);
    char *r = mmap(0, 4 * PG, PROT_READ, anon, -1, 0);
    char *g = mremap(r, 4 * PG, 8 * PG, MREMAP_MAYMOVE);
    probe("PROT_READ grown", g);
    char *two = mmap(0, 4 * PG, PROT_READ | PROT_WRITE, anon, -1, 0);
    mprotect(two + 2 * PG, 2 * PG, PROT_READ);
    mapped("grow across two protections", mremap(two, 4 * PG, 8 * PG, MREMAP_MAYMOVE));
    mapped("same size across two protections", mremap(two, 4 * PG, 4 * PG, 0));
    mapped("shrink across two protections", mremap(two, 4 * PG, 3 * PG, 0));

    int fd = open("f", O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, PG))
        return 1;
    int mfd = syscall(SYS_memfd_create, "m", 0);
    if (mfd < 0 || ftruncate(mfd, 4 * PG))
        return 1;
    char *held = mmap(0, 16 * PG, PROT_NONE, anon, -1, 0);
    mapped("NOREPLACE private file, fd -1, taken", mmap(held, PG, 3, MAP_PRIVATE | MAP_FIXED_NOREPLACE, -1, 0));
    mapped("NOREPLACE anonymous, no type, taken", mmap(held, PG, 3, MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0));
    mapped("NOREPLACE SHARED_VALIDATE file, taken", mmap(held, PG, 3, MAP_SHARED_VALIDATE | MAP_FIXED_NOREPLACE, fd, 0));
    mapped("FIXED unaligned, bad fd", mmap(held + 1, PG, 3, MAP_PRIVATE | MAP_FIXED, 999, 0));
    mapped("2^47 bytes, bad fd", mmap(0, 1UL << 47, 3, MAP_PRIVATE, 999, 0));
    mapped("GROWSDOWN private memfd", mmap(0, PG, 3, MAP_PRIVATE | MAP_GROWSDOWN, mfd, 0));
    mapped("GROWSDOWN shared memfd", mmap(0, PG, 3, MAP_SHARED | MAP_GROWSDOWN, mfd, 0));
    mapped("SHARED_VALIDATE with 0x80, memfd", mmap(0, PG, 3, MAP_SHARED_VALIDATE | 0x80, mfd, 0));
    mapped("SHARED_VALIDATE with 0x200, memfd", mmap(0, PG, 3, MAP_SHARED_VALIDATE | 0x200, mfd, 0));
    mapped("PRIVATE|MAP_SYNC file", mmap(0, PG, 3, MAP_PRIVATE | 0x80000, fd, 0));
    mapped("PRIVATE|MAP_SYNC anonymous", mmap(0, PG, 3, anon | 0x80000, -1, 0));
    mapped("FIXED HUGETLB at a 4 KiB boundary", mmap(held + PG, PG, 3, anon | MAP_FIXED | MAP_HUGETLB, -1, 0));

    char *p = mmap(0, 4 * PG, PROT_READ, anon, -1, 0);
    said("mprotect PROT_SEM", mprotect(p, PG, 0x8));
    said("mprotect RWX|PROT_SEM", mprotect(p, PG, 0xf));
    said("mprotect 0x10", mprotect(p, PG, 0x10));
    said("mprotect empty, GROWSUP|RW", mprotect(p, 0, PROT_GROWSUP | 3));
    said("mprotect empty, both directions", mprotect(p, 0, PROT_GROWSUP | PROT_GROWSDOWN | 3));
    said("mprotect empty, 0x10", mprotect(p, 0, 0x10));
    said("mprotect GROWSUP", mprotect(p, PG, PROT_GROWSUP | 3));
    said("mprotect GROWSDOWN, not a stack", mprotect(p, PG, PROT_GROWSDOWN | 3));
    munmap(p + 2 * PG, PG);
    said("mprotect hole, GROWSDOWN", mprotect(p + 2 * PG, PG, PROT_GROWSDOWN | PROT_READ));
    said("mprotect hole, GROWSUP", mprotect(p + 2 * PG, PG, PROT_GROWSUP | PROT_READ));
    said("mprotect hole, RWX|PROT_SEM", mprotect(p + 2 * PG, PG, 0xf));
    said("mprotect hole, 0x10", mprotect(p + 2 * PG, PG, 0x10));
    said("mprotect past the end", mprotect(p, -4096UL, 3));

    // Parts of one shared mapping split by mprotect join again (hrt kept them apart: EFAULT).
    char *sh = mmap(0, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
    sh[PG] = 'm';
    mprotect(sh + PG, PG, PROT_READ);
    mprotect(sh + PG, PG, PROT_READ | PROT_WRITE);
    char *grown = mremap(sh, 4 * PG, 8 * PG, MREMAP_MAYMOVE);
    mapped("grow shared memfd after mprotect there and back", grown);
    if (grown != MAP_FAILED)
        printf("  its byte: %c\n", grown[PG]);

    // Locked memory: COLD and PAGEOUT are refused as DONTNEED is; munlock over a hole
    // unlocks what comes before it (hrt unlocked nothing).
    char *l = mmap(0, 4 * PG, PROT_READ | PROT_WRITE, anon, -1, 0);
    said("mlock", mlock(l, 4 * PG));
    said("MADV_COLD on locked memory", madvise(l, 4 * PG, MADV_COLD));
    said("MADV_PAGEOUT on locked memory", madvise(l, 4 * PG, MADV_PAGEOUT));
    munmap(l + 2 * PG, PG);
    said("munlock over a hole", munlock(l, 4 * PG));
    said("MADV_DONTNEED before the hole", madvise(l, PG, MADV_DONTNEED));
    said("munlock from a hole", munlock(l + 2 * PG, 2 * PG));
    said("mlock over a hole", mlock(l, 4 * PG));
    said("MADV_DONTNEED before it", madvise(l, PG, MADV_DONTNEED));

    char *f = mmap(0, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    said("POPULATE_READ shared, past the end", madvise(f, 3 * PG, MADV_POPULATE_READ));
    said("POPULATE_WRITE shared, past the end", madvise(f, 3 * PG, MADV_POPULATE_WRITE));
    said("POPULATE_WRITE shared, within", madvise(f, PG, MADV_POPULATE_WRITE));
    close(fd);
    close(mfd);
    unlink("f");
    if (chdir("/") || rmdir(dir))
        printf("left behind\n");
    printf("mapping checks: done\n");
    return 0;
}
