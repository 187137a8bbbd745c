/* prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, ...), as Go's runtime calls it at start: accepted for
 * mapped anonymous memory, refused for a misaligned address, a bad or too long name, an
 * unmapped range, a name pointer that points nowhere. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#define PR_SET_VMA_ANON_NAME 0
#endif

static void show(const char *what, int r) { printf("%s: %d %s\n", what, r, r ? strerror(errno) : ""); }

int main(void) {
    char *m = mmap(0, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(m + 3 * 4096, 4096);
    char longname[100];
    memset(longname, 'x', 99);
    longname[99] = 0;
    show("named", prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, m, 2 * 4096, "heap arena"));
    show("cleared", prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, m, 4096, 0));
    show("misaligned", prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, m + 1, 4096, "x"));
    show("bad character", prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, m, 4096, "a$b"));
    show("too long", prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, m, 4096, longname));
    show("unmapped part", prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, m, 4 * 4096, "x"));
    show("name nowhere", prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, m, 4096, (char *)8));
    return 0;
}
