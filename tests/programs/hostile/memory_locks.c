/* Locked memory as Linux keeps it: VmLck after mlock, mlock2(MLOCK_ONFAULT), munlock,
 * MAP_LOCKED, mlockall(MCL_CURRENT | MCL_FUTURE) (later mappings and the break locked too) and
 * munlockall; a locked mapping is an area of its own in /proc/self/maps, with smaps' Locked
 * and `lo`; madvise DONTNEED, FREE and REMOVE on locked memory are EINVAL (DONTNEED_LOCKED is
 * not), msync MS_INVALIDATE EBUSY; mremap carries the lock; a forked child has none. Then
 * RLIMIT_MEMLOCK without CAP_IPC_LOCK (dropped from the effective set): mlock past it ENOMEM,
 * MAP_LOCKED EAGAIN, mlockall(MCL_CURRENT) ENOMEM, and a limit of 0 EPERM. Prints only what
 * Linux decides, so the output is the same natively and under hrt. Exit status 0. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MLOCK_ONFAULT
#define MLOCK_ONFAULT 1
#endif
#ifndef MADV_DONTNEED_LOCKED
#define MADV_DONTNEED_LOCKED 24
#endif

static long page;

static long vm_lck(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmLck: %ld", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

/* The maps line and smaps Locked/VmFlags-lo/lf of the area that starts at `addr`, and whether
 * `lo` comes before `ac` (Linux lists the flags in the order of their bits). */
static void area(const char *what, void *addr) {
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    unsigned long start, end;
    int in = 0;
    long locked = -1;
    int lo = 0, lf = 0, in_order = 1;
    unsigned long size = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx ", &start, &end) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            if (in)
                break;
            in = start == (unsigned long)addr;
            size = end - start;
            continue;
        }
        if (!in)
            continue;
        sscanf(line, "Locked: %ld kB", &locked);
        if (!strncmp(line, "VmFlags:", 8)) {
            char *l = strstr(line, " lo "), *a = strstr(line, " ac ");
            lo = l != NULL;
            lf = strstr(line, " lf ") != NULL;
            in_order = !l || !a || l < a;
        }
    }
    if (f)
        fclose(f);
    if (!in)
        printf("%-44s no area starts there\n", what);
    else
        printf("%-44s area %lu pages, Locked %ld kB, lo %d, lf %d, in order %d\n", what, size / page, locked, lo, lf,
               in_order);
}

static void say(const char *what, long ret) {
    printf("%-44s %s\n", what, ret == 0 ? "ok" : strerror(errno));
}

static void delta(const char *what, long before) {
    printf("%-44s VmLck %+ld kB\n", what, vm_lck() - before);
}

static int drop_ipc_lock(void) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d))
        return -1;
    d[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    return syscall(SYS_capset, &h, d);
}

int main(void) {
    page = sysconf(_SC_PAGESIZE);
    long base = vm_lck();
    printf("VmLck at start %ld kB\n", base);

    char *a = mmap(NULL, 16 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    say("mlock 4 pages in the middle", mlock(a + 4 * page, 4 * page));
    delta("  then", base);
    area("  the locked part", a + 4 * page);
    area("  the part after it", a + 8 * page);
    say("mlock the same pages again", mlock(a + 4 * page, 4 * page));
    delta("  then", base);
    say("mlock2 ONFAULT 2 more (one partly)", syscall(SYS_mlock2, a + 8 * page, page + 1, MLOCK_ONFAULT));
    delta("  then", base);
    a[8 * page] = 1, a[9 * page] = 1;
    area("  the part locked on fault, touched", a + 8 * page);
    say("madvise DONTNEED on locked memory", madvise(a + 4 * page, page, MADV_DONTNEED));
    say("madvise FREE on locked memory", madvise(a + 4 * page, page, MADV_FREE));
    say("madvise REMOVE on locked memory", madvise(a + 4 * page, page, MADV_REMOVE));
    say("madvise DONTNEED_LOCKED on it", madvise(a + 4 * page, page, MADV_DONTNEED_LOCKED));
    say("madvise DONTNEED on unlocked memory", madvise(a, page, MADV_DONTNEED));
    say("msync MS_INVALIDATE of locked memory", msync(a + 4 * page, page, MS_INVALIDATE));
    say("msync MS_INVALIDATE of unlocked memory", msync(a, page, MS_INVALIDATE));
    say("munlock 2 of them", munlock(a + 4 * page, 2 * page));
    delta("  then", base);
    say("munlock unmapped memory", munlock(a + 64 * page, page));
    say("mlock unmapped memory", mlock(a + 64 * page, page));
    munmap(a, 16 * page);
    delta("munmap of it all", base);

    char *m = mmap(NULL, 8 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
    delta("mmap MAP_LOCKED of 8 pages", base);
    area("  its area", m);
    char *g = mremap(m, 8 * page, 12 * page, MREMAP_MAYMOVE);
    say("mremap it to 12 pages", g == MAP_FAILED ? -1 : 0);
    delta("  then", base);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        printf("%-44s VmLck %ld kB\n", "a forked child", vm_lck());
        fflush(stdout);
        _exit(0);
    }
    waitpid(child, NULL, 0);
    munmap(g, 12 * page);
    delta("munmap of it", base);

    say("mlockall CURRENT|FUTURE", mlockall(MCL_CURRENT | MCL_FUTURE));
    printf("%-44s %s\n", "  VmLck above 0", vm_lck() > 0 ? "yes" : "no");
    long all = vm_lck();
    char *f = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    delta("  an mmap of 4 pages after it", all);
    all = vm_lck();
    char *brk0 = sbrk(0);
    sbrk(8 * page - ((unsigned long)brk0 & (page - 1)));
    delta("  the break grown by 8 pages", all);
    sbrk(-8 * page + ((unsigned long)brk0 & (page - 1)));
    munmap(f, 4 * page);
    say("munlockall", munlockall());
    printf("%-44s %ld kB\n", "  VmLck", vm_lck());
    char *h = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    delta("  an mmap after it", base);
    munmap(h, 4 * page);

    /* Without CAP_IPC_LOCK the limit binds. */
    say("drop CAP_IPC_LOCK from the effective set", drop_ipc_lock());
    struct rlimit small = {4 * page, 4 * page};
    say("RLIMIT_MEMLOCK 4 pages", setrlimit(RLIMIT_MEMLOCK, &small));
    char *b = mmap(NULL, 8 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    say("mlock 3 pages", mlock(b, 3 * page));
    say("mlock 2 more", mlock(b + 3 * page, 2 * page));
    say("mlock 1 more", mlock(b + 3 * page, page));
    say("mlock the 4 locked ones again", mlock(b, 4 * page));
    char *c = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
    say("mmap MAP_LOCKED past the limit", c == MAP_FAILED ? -1 : 0);
    say("mlockall CURRENT past the limit", mlockall(MCL_CURRENT));
    say("mlockall FUTURE", mlockall(MCL_FUTURE));
    char *d = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    say("  an mmap past the limit", d == MAP_FAILED ? -1 : 0);
    say("munlockall", munlockall());
    struct rlimit none = {0, 0};
    say("RLIMIT_MEMLOCK 0", setrlimit(RLIMIT_MEMLOCK, &none));
    say("mlock 1 page", mlock(b + 6 * page, page));
    c = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
    say("mmap MAP_LOCKED", c == MAP_FAILED ? -1 : 0);
    say("mlockall CURRENT", mlockall(MCL_CURRENT));
    say("munlock 1 page", munlock(b, page));
    return 0;
}
