// Resource limits inherited from whoever started the program (the test lowers some before it
// starts the program natively and under hrt): each limit as getrlimit and prlimit report it,
// then a lowered soft limit read back.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

int main(void) {
    for (int r = 0; r < RLIM_NLIMITS; r++) {
        struct rlimit a, b;
        int x = getrlimit(r, &a), y = prlimit(0, r, NULL, &b);
        printf("%2d: %d %llu %llu | %d %llu %llu\n", r, x, (unsigned long long)a.rlim_cur,
               (unsigned long long)a.rlim_max, y, (unsigned long long)b.rlim_cur, (unsigned long long)b.rlim_max);
    }
    struct rlimit n;
    getrlimit(RLIMIT_NOFILE, &n);
    n.rlim_cur = n.rlim_cur / 2;
    printf("lower NOFILE soft: %d\n", setrlimit(RLIMIT_NOFILE, &n));
    getrlimit(RLIMIT_NOFILE, &n);
    printf("NOFILE now %llu\n", (unsigned long long)n.rlim_cur);
    return 0;
}
