// Signals whose handlers return through the C library's restorer (`__restore_rt`: `mov $15,
// %rax; syscall`), 2,000 of them: the handler counts and sees its argument, the interrupted
// code's registers and floating-point state come back, and (under `hrt -v`) the restorer's
// `syscall` is rewritten into a call like the program's other sites: it kept SYSCALL, ~19 us
// a signal on a PVM host. Then a handler on an alternate stack, placed so that the slot below
// its frame starts a page, makes the frame's pages read-only and returns: the restorer's
// `syscall` writes nothing and rt_sigreturn only reads the frame, so the program goes on (the
// rewritten `call` cannot push there; HRT takes that fault as the system call). The
// restorer's address goes to stderr (it differs from the native run's); stdout is compared
// with the native run.
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
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

enum { PAGE = 4096, ALT = 16 * PAGE };
static char alt[ALT] __attribute__((aligned(PAGE)));
static volatile long protect_result = -1;

// Makes the pages from the one holding the slot below its frame (where the restorer's return
// address was) to the alternate stack's top read-only, and returns: the system call is made
// here, not through the C library, since this handler's own stack shares the slot's page and
// nothing may be written to it after (the epilogue only pops).
static void on_usr2(int sig, siginfo_t *info, void *uc) {
    (void)sig;
    (void)info;
    uintptr_t from = ((uintptr_t)uc - 8) & ~(uintptr_t)(PAGE - 1);
    long r;
    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"((long)SYS_mprotect), "D"(from), "S"((uintptr_t)alt + ALT - from), "d"((long)PROT_READ)
                     : "rcx", "r11", "memory");
    protect_result = r;
}

static int read_only_frame(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_usr2;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGUSR2, &sa, NULL);
    stack_t ss = {.ss_sp = alt, .ss_size = ALT, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    double y = 3.0;
    raise(SIGUSR2);
    y = y * 1.5 + 0.25;
    int ok = protect_result == 0 && mprotect(alt, ALT, PROT_READ | PROT_WRITE) == 0;
    printf("restorer under a read-only frame: returned, %s, y %.2f\n", ok ? "frame was read-only" : "NOT PROTECTED", y);
    return ok;
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
    if (!read_only_frame())
        return 1;
    printf("restorer: done\n");
    return 0;
}
