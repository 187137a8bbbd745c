/* Memory just above the break is no mapping on Linux, whatever the kernel keeps there (HRT keeps
 * the break's window mapped so that it grows cheaply): msync, mincore, mprotect, madvise, mlock
 * and munlock of it are ENOMEM, and a fixed mapping may take it. A PROT_NONE mapping is one:
 * mlock and munlock take it, mincore answers for it (not resident until made accessible and
 * touched). Exit status 0; prints only what Linux decides. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define T(what, call) printf("%-36s %s\n", what, (call) == 0 ? "ok" : strerror(errno))

int main(void) {
    long pg = sysconf(_SC_PAGESIZE);
    char *top = sbrk(0);
    char *p = (char *)(((unsigned long)top + pg - 1) & ~(pg - 1)) + 4 * pg;
    unsigned char v[4];
    T("msync above the break", msync(p, pg, MS_SYNC));
    T("mincore above the break", mincore(p, pg, v));
    T("mprotect above the break", mprotect(p, pg, PROT_READ));
    T("madvise DONTNEED above the break", madvise(p, pg, MADV_DONTNEED));
    T("madvise NORMAL above the break", madvise(p, pg, MADV_NORMAL));
    T("mlock above the break", mlock(p, pg));
    T("munlock above the break", munlock(p, pg));
    char *q = mmap(p, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    printf("%-36s %s\n", "a fixed mapping there", q == p ? "ok" : strerror(errno));
    T("then msync of it", msync(p, pg, MS_SYNC));
    munmap(p, pg);

    char *n = mmap(NULL, 4 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    T("mincore of PROT_NONE memory", mincore(n, 4 * pg, v));
    printf("%-36s %d %d %d %d\n", "  resident", v[0] & 1, v[1] & 1, v[2] & 1, v[3] & 1);
    T("mlock of PROT_NONE memory", mlock(n, 4 * pg));
    T("munlock of PROT_NONE memory", munlock(n, 4 * pg));
    T("mprotect 2 pages read-write", mprotect(n, 2 * pg, PROT_READ | PROT_WRITE));
    n[0] = 1;
    n[pg] = 1;
    T("mincore again", mincore(n, 4 * pg, v));
    printf("%-36s %d %d %d %d\n", "  resident", v[0] & 1, v[1] & 1, v[2] & 1, v[3] & 1);
    return 0;
}
