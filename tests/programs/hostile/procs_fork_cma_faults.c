/* Cross-memory attach where Linux faults: a forked child (under hrt, another VM) reads and
 * writes its parent's memory (process_vm_readv/writev on getppid()) at pages the parent
 * never mapped, unmapped after the fork, made PROT_NONE, read-only, execute-only, write-only
 * or shrunk by mremap, above its break and in its code, with iovecs that fault part of the way (Linux returns the bytes
 * copied up to the first remote fault, EFAULT only if none were). Every answer is printed;
 * the bytes copied are checked against the parent's. The child also reads itself. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096
#define PAGES 4

/* The parent's regions (the child inherits the addresses). */
static unsigned char *plain, *prot_none, *unmapped_later, *read_only, *shrunk, *never, *no_read;

/* Never 0xa5, the child's byte, so the parent counts exactly what the child wrote. */
static unsigned char pattern(const unsigned char *region, size_t i) {
    return (unsigned char)(((uintptr_t)region / PAGE + i * 7 + 1) & 0x7f);
}

static unsigned char *region(void) {
    unsigned char *p = mmap(NULL, PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    for (size_t i = 0; i < PAGES * PAGE; i++)
        p[i] = pattern(p, i);
    return p;
}

/* How many of the `n` bytes at `got` differ from the parent's bytes at `region + off`. */
static long differ(const unsigned char *got, const unsigned char *region, size_t off, size_t n) {
    long d = 0;
    for (size_t i = 0; i < n; i++)
        d += got[i] != pattern(region, off + i);
    return d;
}

static void say(const char *what, ssize_t r) {
    if (r < 0)
        printf("%s: -1 %s\n", what, strerrorname_np(errno));
    else
        printf("%s: %zd\n", what, r);
}

static unsigned char buf[PAGES * PAGE];

/* Reads `len` bytes at `remote` of `pid` into buf (one iovec each side) and says what came. */
static ssize_t read_one(const char *what, pid_t pid, void *remote, size_t len) {
    struct iovec l = {buf, len}, r = {remote, len};
    memset(buf, 0, sizeof buf);
    ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
    say(what, got);
    return got;
}

static ssize_t write_one(const char *what, pid_t pid, void *remote, size_t len) {
    struct iovec l = {buf, len}, r = {remote, len};
    ssize_t got = process_vm_writev(pid, &l, 1, &r, 1, 0);
    say(what, got);
    return got;
}

static void child(pid_t parent) {
    ssize_t r = read_one("read plain", parent, plain, PAGES * PAGE);
    printf("  differences %ld\n", differ(buf, plain, 0, r > 0 ? r : 0));
    read_one("read never mapped", parent, never, 100);
    r = read_one("read across PROT_NONE (from mid page 1)", parent, prot_none + PAGE + 100, 3 * PAGE);
    printf("  differences %ld\n", differ(buf, prot_none, PAGE + 100, r > 0 ? r : 0));
    read_one("read PROT_NONE page", parent, prot_none + 2 * PAGE, 10);
    read_one("read page after PROT_NONE", parent, prot_none + 3 * PAGE, 10);
    r = read_one("read across page unmapped after fork", parent, unmapped_later, PAGES * PAGE);
    printf("  differences %ld\n", differ(buf, unmapped_later, 0, r > 0 ? r : 0));
    r = read_one("read read-only pages", parent, read_only, PAGES * PAGE);
    printf("  differences %ld\n", differ(buf, read_only, 0, r > 0 ? r : 0));
    read_one("read shrunk by mremap", parent, shrunk, PAGES * PAGE);
    read_one("read cut-off part of shrunk", parent, shrunk + 2 * PAGE, 10);
    void *brk_top = (void *)(((uintptr_t)sbrk(0) + PAGE - 1) & ~(uintptr_t)(PAGE - 1));
    read_one("read above the break", parent, brk_top, 10);
    read_one("read own PROT_NONE page", getpid(), prot_none + 2 * PAGE, 10);
    /* Linux's cross-memory attach needs PROT_READ to read (the hardware does not). */
    read_one("read across execute-only (from page 0)", parent, no_read, 2 * PAGE);
    read_one("read execute-only page", parent, no_read + PAGE, 10);
    read_one("read write-only page", parent, no_read + 2 * PAGE, 10);
    read_one("read own execute-only page", getpid(), no_read + PAGE, 10);

    /* Several remote iovecs: the copy stops at the first fault. */
    memset(buf, 0, sizeof buf);
    struct iovec l = {buf, sizeof buf};
    struct iovec rv[3] = {{plain, 100}, {unmapped_later + 2 * PAGE, 50}, {plain + 200, 10}};
    r = process_vm_readv(parent, &l, 1, rv, 3, 0);
    say("readv plain, unmapped, plain", r);
    printf("  differences %ld\n", differ(buf, plain, 0, r > 0 ? r : 0));
    struct iovec first_faults[2] = {{never, 10}, {plain, 10}};
    say("readv unmapped, plain", process_vm_readv(parent, &l, 1, first_faults, 2, 0));
    struct iovec empty_first[2] = {{never, 0}, {plain, 10}};
    say("readv empty unmapped, plain", process_vm_readv(parent, &l, 1, empty_first, 2, 0));
    struct iovec part[2] = {{plain + PAGES * PAGE - 30, 30}, {prot_none + 2 * PAGE - 20, 100}};
    say("readv end of plain, into PROT_NONE", process_vm_readv(parent, &l, 1, part, 2, 0));
    struct iovec short_local = {buf, 40};
    struct iovec ends_before[2] = {{plain, 40}, {never, 100}};
    say("readv local ends before the fault", process_vm_readv(parent, &short_local, 1, ends_before, 2, 0));
    struct iovec no_local = {buf, 0};
    say("readv empty local, unmapped remote", process_vm_readv(parent, &no_local, 1, first_faults, 1, 0));
    struct iovec nothing = {never, 0};
    say("readv empty remote, no such pid", process_vm_readv(0x3ffffff0, &l, 1, &nothing, 1, 0));
    say("readv no remote iovec, no such pid", process_vm_readv(0x3ffffff0, &l, 1, &nothing, 0, 0));
    say("readv unmapped remote, no such pid", process_vm_readv(0x3ffffff0, &l, 1, first_faults, 1, 0));
    struct iovec locals[2] = {{buf, 5}, {buf + 100, PAGE}};
    struct iovec remote_part = {prot_none + 2 * PAGE - 8, 100};
    say("readv two locals, remote faults", process_vm_readv(parent, locals, 2, &remote_part, 1, 0));

    /* Writes: read-only and PROT_NONE pages fault; the child's bytes land up to there. */
    memset(buf, 0xa5, sizeof buf);
    write_one("write across read-only (pages 1-2)", parent, read_only + PAGE, 2 * PAGE);
    write_one("write read-only page", parent, read_only + 2 * PAGE, 10);
    write_one("write PROT_NONE page", parent, prot_none + 2 * PAGE, 10);
    write_one("write never mapped", parent, never, 10);
    write_one("write execute-only page", parent, no_read + PAGE, 10);
    write_one("write write-only page", parent, no_read + 2 * PAGE, 10);
    write_one("write across page unmapped after fork", parent, unmapped_later + PAGE, 2 * PAGE);
    struct iovec wv[2] = {{plain, 16}, {read_only + 3 * PAGE, 16}};
    struct iovec wl = {buf, 32};
    say("writev plain, read-only", process_vm_writev(parent, &wl, 1, wv, 2, 0));
    /* The parent's code, written with its own bytes (harmless even if it went through). */
    unsigned char *code = (unsigned char *)(((uintptr_t)&child) & ~(uintptr_t)(PAGE - 1));
    read_one("read code", parent, code, 64);
    write_one("write code", parent, code, 64);
}

int main(void) {
    plain = region();
    prot_none = region();
    unmapped_later = region();
    read_only = region();
    shrunk = region();
    never = region();
    no_read = region();
    if (!plain || !prot_none || !unmapped_later || !read_only || !shrunk || !never || !no_read)
        return 1;
    if (mprotect(no_read + PAGE, PAGE, PROT_EXEC) || mprotect(no_read + 2 * PAGE, PAGE, PROT_WRITE))
        return 2;
    if (munmap(never, PAGES * PAGE) || mprotect(prot_none + 2 * PAGE, PAGE, PROT_NONE) ||
        mprotect(read_only + 2 * PAGE, 2 * PAGE, PROT_READ))
        return 2;
    if (mremap(shrunk, PAGES * PAGE, 2 * PAGE, 0) != shrunk)
        return 3;
    fflush(stdout);
    int go[2];
    if (pipe(go))
        return 4;
    pid_t pid = fork();
    if (pid == 0) {
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(5);
        child(getppid());
        fflush(stdout);
        _exit(0);
    }
    /* After the fork: the child still has this page, the parent no longer. */
    if (munmap(unmapped_later + 2 * PAGE, PAGE))
        return 6;
    if (write(go[1], "g", 1) != 1)
        return 7;
    int status;
    waitpid(pid, &status, 0);
    printf("parent: child status %d\n", status);
    long a5 = 0, mine = 0;
    for (size_t i = 0; i < PAGES * PAGE; i++) {
        if (i < 2 * PAGE || i >= 3 * PAGE)
            a5 += unmapped_later[i] == 0xa5;
        a5 += read_only[i] == 0xa5 || plain[i] == 0xa5;
        mine += read_only[i] == pattern(read_only, i);
    }
    printf("parent: bytes the child wrote %ld, read-only bytes still the parent's %ld of %d\n", a5, mine,
           PAGES * PAGE);
    return 0;
}
