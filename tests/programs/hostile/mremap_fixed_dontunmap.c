// mremap with MREMAP_FIXED and MREMAP_DONTUNMAP as Linux does them: the errno of each bad
// combination of flags, lengths and addresses; FIXED moving (shrunk, same size, grown) onto
// free address space and over another mapping (which it replaces); DONTUNMAP leaving the old
// range mapped but empty (zero for anonymous memory, the file's bytes again for a private file
// mapping), with and without FIXED; the moved pages keep their contents and the old ones fault
// or not as on Linux; a private file mapping grown maps the file's next pages. One line per case.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "peek.h"

#define PG 4096
#define RW (PROT_READ | PROT_WRITE)
#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)


static char *fresh(int pages, char fill) {
    char *p = mmap(0, pages * PG, RW, ANON, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    for (int i = 0; i < pages; i++)
        p[i * PG] = fill + i;
    return p;
}

// A free range of `pages` pages (mapped, then unmapped).
static char *hole(int pages) {
    char *p = fresh(pages, 0);
    munmap(p, pages * PG);
    return p;
}

static void result(const char *what, void *r, void *want) {
    if (r == MAP_FAILED)
        printf("%s: %s\n", what, strerrorname_np(errno));
    else
        printf("%s: %s\n", what, r == want ? "at the address asked" : want ? "elsewhere" : "moved");
}

int main(void) {
    peek_catch(SIGSEGV);
    peek_catch(SIGBUS);
    char *old = fresh(2, 'a'), *to = hole(4);
    const int M = MREMAP_MAYMOVE, F = MREMAP_FIXED, D = MREMAP_DONTUNMAP;
    result("fixed without maymove", mremap(old, 2 * PG, 2 * PG, F, to), to);
    result("dontunmap without maymove", mremap(old, 2 * PG, 2 * PG, D, 0), 0);
    result("dontunmap growing", mremap(old, 2 * PG, 3 * PG, M | D, 0), 0);
    result("dontunmap shrinking", mremap(old, 2 * PG, PG, M | D, 0), 0);
    result("unknown flag", mremap(old, 2 * PG, 2 * PG, M | 8, 0), 0);
    // DONTUNMAP takes the new address as a hint, checked as a fixed one is.
    result("dontunmap unaligned hint", mremap(old, 2 * PG, 2 * PG, M | D, to + 1), 0);
    result("fixed unaligned new address", mremap(old, 2 * PG, 2 * PG, M | F, to + 1), to + 1);
    result("fixed overlapping the old range", mremap(old, 2 * PG, 2 * PG, M | F, old + PG), old + PG);
    result("fixed past user space", mremap(old, 2 * PG, 2 * PG, M | F, (void *)0x7ffffffff000ul), 0);
    result("fixed zero new length", mremap(old, 2 * PG, 0, M | F, to), to);
    char *gone = hole(8); // the old range, and the new one 4 pages above it
    result("fixed from an unmapped range", mremap(gone, 2 * PG, 2 * PG, M | F, gone + 4 * PG), gone + 4 * PG);
    printf("old still: %s %s\n", peek(old), peek(old + PG));

    // FIXED onto free address space, same size: the old range is gone.
    char *r = mremap(old, 2 * PG, 2 * PG, M | F, to);
    result("fixed same size", r, to);
    printf("  new %s %s, old %s\n", peek(to), peek(to + PG), peek(old));
    // FIXED over another mapping, shrinking: it replaces that mapping, its tail stays.
    char *victim = fresh(3, 'v');
    r = mremap(to, 2 * PG, PG, M | F, victim);
    result("fixed shrinking over a mapping", r, victim);
    printf("  new %s, victim's rest %s %s, old %s %s\n", peek(victim), peek(victim + PG), peek(victim + 2 * PG),
           peek(to), peek(to + PG));
    // FIXED growing: the added pages read zero.
    char *big = hole(3);
    r = mremap(victim, PG, 3 * PG, M | F, big);
    result("fixed growing", r, big);
    printf("  new %s %s %s, old %s\n", peek(big), peek(big + PG), peek(big + 2 * PG), peek(victim));
    munmap(big, 3 * PG);
    munmap(victim + PG, 2 * PG);

    // DONTUNMAP: the old range stays mapped, empty.
    char *d = fresh(2, 'd');
    r = mremap(d, 2 * PG, 2 * PG, M | D, 0);
    result("dontunmap", r, 0);
    if (r != MAP_FAILED) {
        printf("  new %s %s, old %s %s\n", peek(r), peek(r + PG), peek(d), peek(d + PG));
        d[0] = 'x';
        printf("  old written %s, new %s\n", peek(d), peek(r));
    }
    // DONTUNMAP with FIXED, over another mapping.
    char *e = fresh(1, 'e'), *over = fresh(1, 'o');
    r = mremap(e, PG, PG, M | D | F, over);
    result("dontunmap fixed", r, over);
    printf("  new %s, old %s\n", peek(over), peek(e));

    // DONTUNMAP of a private file mapping: the old range reads the file again.
    char path[] = "/tmp/hrt-mremap-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    unlink(path);
    char page[PG];
    memset(page, 'F', PG);
    write(fd, page, PG);
    char *f = mmap(0, PG, RW, MAP_PRIVATE, fd, 0);
    f[0] = 'w';
    r = mremap(f, PG, PG, M | D, 0);
    result("dontunmap private file", r, 0);
    if (r != MAP_FAILED)
        printf("  new %s, old %s %s\n", peek(r), peek(f), peek(f + 1));

    // A private file mapping grown (moved, and moved FIXED): the grown part is the file's next
    // pages (it read zero under hrt).
    for (char c = 'G'; c <= 'I'; c++) {
        memset(page, c, PG);
        write(fd, page, PG);
    }
    char *g = mmap(0, PG, RW, MAP_PRIVATE, fd, PG);
    g[1] = 'w';
    r = mremap(g, PG, 3 * PG, M);
    if (r != MAP_FAILED)
        printf("grown private file: %c%c %c %c\n", r[0], r[1], r[PG], r[2 * PG]);
    g = mmap(0, 2 * PG, RW, MAP_PRIVATE, fd, 0);
    char *to2 = hole(4);
    r = mremap(g, 2 * PG, 4 * PG, M | F, to2);
    result("fixed growing a private file mapping", r, to2);
    if (r != MAP_FAILED)
        printf("  %c %c %c %c\n", r[0], r[PG], r[2 * PG], r[3 * PG]);
    printf("mremap fixed dontunmap: done\n");
    return 0;
}
