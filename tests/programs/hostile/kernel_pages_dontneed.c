/* MADV_DONTNEED on the pages the kernel puts in a program: Linux's [vvar] refuses it (EINVAL),
 * its [vdso] code is filled again from the kernel's image, so the vDSO keeps working. Under hrt
 * both are program memory, and so is the near table of rewritten system calls (an anonymous
 * r-xp mapping, which the program also drops here without printing it, as natively there is
 * none): until stop 98 DONTNEED zeroed them, and the next vDSO or rewritten call crashed. Then
 * 1,000 clock_gettime and 2,000 getppid calls. Prints the answers for [vvar] and [vdso] and the
 * calls' results; the same on any machine. Last, a forked child stores into [vvar], which is
 * read-only to the program on Linux (it was writable under hrt until stop 98). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

/* How many of n getppid calls name the parent getppid named first. */
static long calls(int n) {
    static pid_t parent;
    if (!parent)
        parent = getppid();
    long named = 0;
    while (n-- > 0)
        named += getppid() == parent;
    return named;
}

int main(void) {
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    printf("calls before: %ld\n", calls(2000));
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    struct { unsigned long lo, hi; char name[16]; } found[16];
    int n = 0;
    while (n < 16 && fgets(line, sizeof line, maps)) {
        unsigned long lo, hi;
        char perms[8];
        int path = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &path) < 3)
            continue;
        const char *name = path > 0 ? line + path : "";
        int anonymous_code = perms[2] == 'x' && (name[0] == '\n' || name[0] == 0);
        if (strncmp(name, "[vvar]", 6) == 0 || strncmp(name, "[vdso]", 6) == 0 || anonymous_code) {
            found[n].lo = lo;
            found[n].hi = hi;
            snprintf(found[n].name, sizeof found[n].name, "%.6s", anonymous_code ? "" : name);
            n++;
        }
    }
    fclose(maps);
    for (int i = 0; i < n; i++) {
        int r = madvise((void *)found[i].lo, found[i].hi - found[i].lo, MADV_DONTNEED);
        if (found[i].name[0])
            printf("%s: %s\n", found[i].name, r == 0 ? "0" : strerror(errno));
    }
    long ok = 0;
    for (int i = 0; i < 1000; i++) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        ok += now.tv_sec > start.tv_sec || (now.tv_sec == start.tv_sec && now.tv_nsec >= start.tv_nsec);
    }
    printf("clock_gettime after: %ld of 1000 not before the start\n", ok);
    printf("calls after: %ld\n", calls(2000));
    fflush(stdout);
    for (int i = 0; i < n; i++) {
        if (strcmp(found[i].name, "[vvar]") != 0)
            continue;
        pid_t child = fork();
        if (child == 0) {
            *(volatile char *)found[i].lo = 1;
            _exit(0);
        }
        int status = 0;
        waitpid(child, &status, 0);
        printf("a store into [vvar]: %s %d\n", WIFSIGNALED(status) ? "signal" : "exit", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
    return 0;
}
