// posix_spawn + waitpid of one program, N times: min, median and max in ms (docs/benchmarks.md,
// "Child processes as HRT processes"). Usage: spawn_wait N PROG [ARGS...]
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: spawn_wait N PROG [ARGS...]\n");
        return 2;
    }
    int n = atoi(argv[1]);
    if (n < 1)
        return 2;
    double *ms = calloc(n, sizeof *ms);
    for (int i = 0; i < n; i++) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        pid_t pid;
        int s;
        if (posix_spawn(&pid, argv[2], NULL, NULL, argv + 2, environ) != 0 || waitpid(pid, &s, 0) != pid ||
            !WIFEXITED(s) || WEXITSTATUS(s) != 0) {
            fprintf(stderr, "spawn_wait: %s failed\n", argv[2]);
            return 1;
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        ms[i] = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
    }
    qsort(ms, n, sizeof *ms, cmp);
    printf("%s: n=%d min=%.2f median=%.2f max=%.2f ms\n", argv[2], n, ms[0], ms[n / 2], ms[n - 1]);
    return 0;
}
