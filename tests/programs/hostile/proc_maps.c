/* The program's /proc/self/maps as Linux lists it: its mappings in order, each with its
 * protection, the file it maps and the file's offset, device and inode, and [heap], [stack]
 * and [vdso]. Prints yes/no answers (addresses differ between runs and systems). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct line {
    unsigned long from, to, off, ino;
    char perms[5], name[512];
};
static struct line lines[4096];
static int nlines;

static void read_maps(void) {
    FILE *f = fopen("/proc/self/maps", "r");
    char buf[1024];
    nlines = 0;
    while (f && fgets(buf, sizeof buf, f) && nlines < 4096) {
        struct line *l = &lines[nlines];
        unsigned maj, min;
        int at = 0;
        l->name[0] = 0;
        if (sscanf(buf, "%lx-%lx %4s %lx %x:%x %lu %n", &l->from, &l->to, l->perms, &l->off, &maj, &min, &l->ino, &at) < 7)
            continue;
        sscanf(buf + at, "%511[^\n]", l->name);
        nlines++;
    }
    if (f)
        fclose(f);
}

static struct line *at(const void *p) {
    unsigned long a = (unsigned long)p;
    for (int i = 0; i < nlines; i++)
        if (lines[i].from <= a && a < lines[i].to)
            return &lines[i];
    return NULL;
}

static void say(const char *what, int ok) { printf("%s: %s\n", what, ok ? "yes" : "no"); }

static char data_var[64] = "data";
static char bss_var[1 << 16];

int main(void) {
    char exe[4096] = {0};
    if (readlink("/proc/self/exe", exe, sizeof exe - 1) < 0)
        return 1;
    long page = sysconf(_SC_PAGESIZE);
    char *three = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(three + page, page, PROT_READ);
    char *none = mmap(NULL, 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *gone = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(gone, page);
    char path[] = "/tmp/hrt-proc-maps-XXXXXX";
    int fd = mkstemp(path);
    char block[8192];
    memset(block, 'x', sizeof block);
    if (fd < 0 || write(fd, block, sizeof block) != (ssize_t)sizeof block)
        return 1;
    char *file = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, page);
    char *file_shared = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, page);
    char *anon_shared = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    anon_shared[0] = 1;
    struct stat fst;
    fstat(fd, &fst);
    void *small = malloc(100);
    int local = 0;
    read_maps();

    int sorted = nlines > 0;
    for (int i = 1; i < nlines; i++)
        sorted &= lines[i - 1].to <= lines[i].from;
    say("lines in order, none overlapping", sorted);
    struct line *code = at((void *)main);
    say("main's code is r-xp and names the executable", code && !strcmp(code->perms, "r-xp") && !strcmp(code->name, exe));
    struct line *d = at(data_var);
    say("initialized data is rw-p", d && !strcmp(d->perms, "rw-p"));
    struct line *b = at(bss_var + sizeof bss_var - 1);
    say("the end of the bss is rw-p", b && !strcmp(b->perms, "rw-p"));
    struct line *l0 = at(three), *l1 = at(three + page), *l2 = at(three + 2 * page);
    say("an mprotect in the middle makes three lines", l0 && l1 && l2 && l0 != l1 && l1 != l2 && l0->to == (unsigned long)three + page &&
                                                       l1->to == (unsigned long)three + 2 * page);
    say("  rw-p, r--p, rw-p", l0 && l1 && l2 && !strcmp(l0->perms, "rw-p") && !strcmp(l1->perms, "r--p") && !strcmp(l2->perms, "rw-p"));
    say("  anonymous", l0 && l1 && l0->name[0] == 0 && l1->name[0] == 0 && l0->ino == 0);
    struct line *n = at(none);
    say("PROT_NONE is ---p", n && !strcmp(n->perms, "---p") && n->to >= (unsigned long)none + 2 * page);
    say("an unmapped page is not listed", at(gone) == NULL || at(gone) != at(three));
    struct line *f = at(file);
    say("a private file mapping names its file", f && !strcmp(f->name, path));
    say("  with its offset, inode and r--p", f && f->off == (unsigned long)page && f->ino == fst.st_ino && !strcmp(f->perms, "r--p"));
    struct line *fs = at(file_shared);
    say("a shared file mapping is r--s and names its file", fs && !strcmp(fs->perms, "r--s") && !strcmp(fs->name, path));
    say("  with its offset and inode", fs && fs->off == (unsigned long)page && fs->ino == fst.st_ino);
    struct line *as = at(anon_shared);
    say("anonymous shared memory is rw-s /dev/zero (deleted)", as && !strcmp(as->perms, "rw-s") && !strcmp(as->name, "/dev/zero (deleted)"));
    struct line *h = at(small);
    say("a small malloc is in [heap]", h && !strcmp(h->name, "[heap]") && !strcmp(h->perms, "rw-p"));
    struct line *s = at(&local);
    say("a local is in [stack]", s && !strcmp(s->name, "[stack]") && !strcmp(s->perms, "rw-p"));
    struct line *v = at((void *)getauxval(AT_SYSINFO_EHDR));
    say("the vDSO is [vdso], r-xp", v && !strcmp(v->name, "[vdso]") && !strcmp(v->perms, "r-xp"));
    int inodes = 1, files = 0;
    for (int i = 0; i < nlines; i++) {
        struct stat st;
        if (lines[i].name[0] != '/')
            continue;
        files++;
        if (stat(lines[i].name, &st) == 0 && st.st_ino != lines[i].ino) {
            fprintf(stderr, "inode of %s: %lu listed, %lu\n", lines[i].name, lines[i].ino, (unsigned long)st.st_ino);
            inodes = 0;
        }
    }
    say("every file's inode is the file's", files > 0 && inodes);
    /* smaps: each area's line, then its figures; the rollup sums them. */
    char *touched = malloc(4 << 20);
    memset(touched, 1, 4 << 20);
    FILE *sm = fopen("/proc/self/smaps", "r");
    char buf[1024];
    unsigned long from, to, kb, areas = 0, sizes = 0, middle_kb = 0;
    int after_middle = 0;
    while (sm && fgets(buf, sizeof buf, sm)) {
        if (sscanf(buf, "%lx-%lx ", &from, &to) == 2) { /* (no figure's name is hex, then '-') */
            areas++;
            after_middle = from == (unsigned long)three + page;
        } else if (sscanf(buf, "Size: %lu kB", &kb) == 1) {
            sizes++;
            if (after_middle)
                middle_kb = kb;
        }
    }
    if (sm)
        fclose(sm);
    say("smaps: a Size line for each area", areas > 0 && sizes == areas);
    say("  the middle page's area is one page", middle_kb * 1024 == (unsigned long)page);
    FILE *ru = fopen("/proc/self/smaps_rollup", "r");
    unsigned long rss = 0;
    while (ru && fgets(buf, sizeof buf, ru))
        sscanf(buf, "Rss: %lu kB", &rss);
    if (ru)
        fclose(ru);
    say("smaps_rollup: Rss counts 4 MiB touched", rss >= 4096 && touched[7] == 1);
    munmap(file, page);
    read_maps();
    say("after munmap the file is not listed", at(file) == NULL || strcmp(at(file)->name, path) != 0);
    unlink(path);
    return 0;
}
