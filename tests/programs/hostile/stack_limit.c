/* The main stack ends at the soft RLIMIT_STACK, as on Linux: recursion in ~1 KiB frames
 * overflows (SIGSEGV, taken on an alternate stack) within the last 48 KiB below the limit,
 * whatever the limit (the test sets 256 KiB and 1 MiB; the arguments and environment at the
 * stack's top take a few KiB, which differ between runs). Usage: stack_limit */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "handler.h"

static volatile long depth;
static long limit;

static void on_segv(int sig) {
    (void)sig;
    long used = depth * 1024;
    char line[96];
    int n = snprintf(line, sizeof line, "overflow within the limit's last 48 KiB: %d\n",
                     used <= limit && used >= limit - (48 << 10));
    write(1, line, n);
    _exit(0);
}

__attribute__((noinline)) static long recurse(long d) {
    volatile char frame[1000];
    frame[0] = (char)d;
    depth = d;
    return recurse(d + 1) + frame[0];
}

int main(void) {
    stack_t ss = {.ss_sp = malloc(65536), .ss_size = 65536};
    sigaltstack(&ss, NULL);
    set_handler(SIGSEGV, on_segv, SA_ONSTACK);
    struct rlimit rl;
    getrlimit(RLIMIT_STACK, &rl);
    limit = (long)rl.rlim_cur;
    printf("stack limit %ld\n", limit);
    fflush(stdout);
    return (int)recurse(0);
}
