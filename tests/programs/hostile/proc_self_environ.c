// /proc/self/environ and /proc/self/auxv: the program's initial environment strings, in order,
// each with its NUL (one changed in place shows changed), and its auxiliary vector, whose
// entries are the ones getauxval answers. Both were EACCES under hrt.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

extern char **environ;

static size_t slurp(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return 0;
    }
    size_t n = fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

int main(int argc, char **argv, char **envp) {
    (void)argc;
    (void)argv;
    static char buf[1 << 20], want[1 << 20];
    size_t w = 0;
    for (char **e = envp; *e; e++) {
        size_t n = strlen(*e) + 1;
        memcpy(want + w, *e, n);
        w += n;
    }
    size_t n = slurp("/proc/self/environ", buf, sizeof buf);
    printf("environ is the initial environment: %d\n", n == w && memcmp(buf, want, n) == 0);
    // setenv's new variables are not in the initial area; a change in place is.
    setenv("HRT_TEST_NEW", "1", 1);
    if (envp[0]) envp[0][0] = '#';
    n = slurp("/proc/self/environ", buf, sizeof buf);
    printf("a new variable shows: %d\n", memmem(buf, n, "HRT_TEST_NEW", 12) != NULL);
    printf("a change in place shows: %d\n", envp[0] && buf[0] == '#');
    unsigned long aux[128];
    n = slurp("/proc/self/auxv", (char *)aux, sizeof aux);
    int entries = 0, same = 1, ended = 0;
    for (size_t i = 0; i + 1 < n / 8; i += 2) {
        entries++;
        if (aux[i] == AT_NULL) {
            ended = 1;
            break;
        }
        unsigned long k = aux[i];
        if (k == AT_PAGESZ || k == AT_ENTRY || k == AT_PHDR || k == AT_RANDOM || k == AT_EXECFN || k == AT_UID ||
            k == AT_BASE || k == AT_PHNUM)
            same &= getauxval(k) == aux[i + 1];
    }
    printf("auxv ends with AT_NULL: %d, its entries are getauxval's: %d, has entries: %d\n", ended, same, entries > 5);
    return 0;
}
