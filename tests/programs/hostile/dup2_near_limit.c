/* Descriptor numbers up to RLIMIT_NOFILE's soft limit with the soft limit raised to the hard
 * one (CPython's test_selectors and rustix's select test): dup2 to the last two numbers and
 * F_DUPFD_CLOEXEC from the last work, the limit itself is EBADF/EINVAL, as on Linux. Under hrt
 * the last 64 numbers were refused (the monitor keeps room for its own descriptors, which
 * limits how many may be open, not their numbers). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void show(const char *what, int r) {
    if (r < 0)
        printf("%-28s -1 %s\n", what, strerror(errno));
    else
        printf("%-28s ok\n", what);
    if (r > 2)
        close(r);
}

int main(void) {
    struct rlimit r;
    getrlimit(RLIMIT_NOFILE, &r);
    r.rlim_cur = r.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &r) != 0) {
        perror("setrlimit");
        return 1;
    }
    int top = r.rlim_cur > (1 << 20) ? (1 << 20) : (int)r.rlim_cur;
    show("dup2 to the last number", dup2(0, top - 1));
    show("dup2 to the one before", dup2(0, top - 2));
    show("F_DUPFD_CLOEXEC from the last", fcntl(0, F_DUPFD_CLOEXEC, top - 1));
    show("dup2 to the limit", dup2(0, top));
    show("F_DUPFD from the limit", fcntl(0, F_DUPFD, top));
    int a = dup2(0, top - 1), b = dup2(1, top - 2);
    printf("both held at once: %s\n", a == top - 1 && b == top - 2 ? "yes" : "no");
    printf("dup2 near limit: done\n");
    return 0;
}
