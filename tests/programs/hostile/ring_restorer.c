// Signals whose handlers return through the C library's restorer (`__restore_rt`: `mov $15,
// %rax; syscall`), 2,000 of them: the handler counts and sees its argument, the interrupted
// code's registers and floating-point state come back, and (under `hrt -v`) the restorer's
// `syscall` is rewritten into a call like the program's other sites: it kept SYSCALL, ~19 us
// a signal on a PVM host. The restorer's address goes to stderr (it differs from the native
// run's); stdout is compared with the native run.
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct kernel_sigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    uint64_t mask;
};

static volatile long taken, wrong;

static void on_usr1(int sig) {
    taken++;
    if (sig != SIGUSR1)
        wrong++;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    struct kernel_sigaction k;
    if (syscall(SYS_rt_sigaction, SIGUSR1, NULL, &k, 8) != 0)
        return 1;
    fprintf(stderr, "restorer at %p\n", k.restorer);
    pid_t pid = getpid();
    long tid = syscall(SYS_gettid);
    double x = 1.0;
    long sum = 0;
    for (int i = 0; i < 2000; i++) {
        syscall(SYS_tgkill, pid, tid, SIGUSR1);
        x = x * 1.0001 + 0.5;
        sum += i;
    }
    printf("handlers ran %ld (wrong signal %ld); sum %ld; x %.6f\n", taken, wrong, sum, x);
    printf("restorer: done\n");
    return 0;
}
