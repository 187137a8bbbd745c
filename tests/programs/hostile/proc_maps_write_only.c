/* /proc/self/maps shows a mapping's protection as it was asked for: write-only `-w-p`,
 * write-and-execute shared `-wxs`, read-write `rw-p` (LTP's mmap04). The page tables cannot
 * hold write-only (writable pages are readable there): hrt showed them `rw`. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static void show(const char *what, void *at) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
        unsigned long start;
        char perms[8];
        if (sscanf(line, "%lx-%*x %7s", &start, perms) == 2 && (void *)start == at)
            printf("%s: %s\n", what, perms);
    }
    if (f)
        fclose(f);
}

int main(void) {
    void *w = mmap(0, 8192, PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *wx = mmap(0, 4096, PROT_WRITE | PROT_EXEC, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    void *rw = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    show("write-only private", w);
    show("write and execute shared", wx);
    show("read-write private", rw);
    mprotect(w, 4096, PROT_READ | PROT_WRITE);
    show("its first page made read-write", w);
    show("its second page, still write-only", (char *)w + 4096);
    return 0;
}
