/* RLIMIT_AS as on Linux, with `hrt` itself started under an address-space limit (the test
 * sets 1 GiB, as `ulimit -v` does, before both runs): the limit inherited, then a lower one set
 * by the program: mmap, malloc, sbrk and mremap fail with ENOMEM past it, also in a forked
 * child; a started program (a shell) reads it back. One line per case.
 * Usage: rlimit_as */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MIB (1UL << 20)

static const char *mapped(void *p) { return p == MAP_FAILED ? "failed" : "ok"; }

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct rlimit l;
    getrlimit(RLIMIT_AS, &l);
    printf("inherited: soft %lu MiB, hard %lu MiB\n", l.rlim_cur / MIB, l.rlim_max / MIB);
    void *big = mmap(NULL, 1100 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("mmap 1100 MiB under it: %s %s\n", mapped(big), strerrorname_np(errno));
    struct rlimit low = {256 * MIB, l.rlim_max};
    printf("set 256 MiB: %d\n", setrlimit(RLIMIT_AS, &low));
    errno = 0;
    void *p = mmap(NULL, 300 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("mmap 300 MiB: %s %s\n", mapped(p), strerrorname_np(errno));
    p = mmap(NULL, 100 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("mmap 100 MiB: %s\n", mapped(p));
    errno = 0;
    void *q = mremap(p, 100 * MIB, 300 * MIB, MREMAP_MAYMOVE);
    printf("mremap to 300 MiB: %s %s\n", mapped(q), strerrorname_np(errno));
    q = mremap(p, 100 * MIB, 200 * MIB, MREMAP_MAYMOVE);
    printf("mremap to 200 MiB: %s\n", mapped(q));
    errno = 0;
    void *b = sbrk(200 * MIB);
    printf("sbrk 200 MiB: %s %s\n", b == (void *)-1 ? "failed" : "ok", strerrorname_np(errno));
    pid_t c = fork();
    if (c == 0) {
        errno = 0;
        void *r = mmap(NULL, 200 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        printf("forked child: mmap 200 MiB: %s %s\n", mapped(r), strerrorname_np(errno));
        _exit(0);
    }
    waitpid(c, NULL, 0);
    char *argv[] = {"sh", "-c", "echo started program: ulimit -v $(ulimit -v)", NULL};
    pid_t s;
    if (posix_spawn(&s, "/bin/sh", NULL, NULL, argv, environ) == 0)
        waitpid(s, NULL, 0);
    int n = 0;
    while (malloc(MIB))
        n++;
    printf("malloc of 1 MiB blocks stops at the limit: %s\n", n > 20 && n < 56 ? "yes" : "no");
    return 0;
}
