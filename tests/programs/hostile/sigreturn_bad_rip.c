/* A signal handler that sets the saved instruction pointer to a non-canonical address: the
 * return from it raises a SIGSEGV that another handler catches, with that address in its
 * context, as on Linux (the Linux kernel's x86 selftest sysret_rip); that handler puts the
 * saved registers back and the program goes on. Under hrt the program was ended.
 * Usage: sigreturn_bad_rip */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

static gregset_t saved;
static unsigned long target;
static volatile unsigned long seen;

static void on_segv(int sig, siginfo_t *info, void *context) {
    (void)sig;
    ucontext_t *uc = context;
    seen = uc->uc_mcontext.gregs[REG_RIP];
    printf("SIGSEGV, si_code %d, at rip %#lx\n", info->si_code, seen);
    memcpy(uc->uc_mcontext.gregs, saved, sizeof saved);
}

static void on_usr1(int sig, siginfo_t *info, void *context) {
    (void)sig;
    (void)info;
    ucontext_t *uc = context;
    memcpy(saved, uc->uc_mcontext.gregs, sizeof saved);
    uc->uc_mcontext.gregs[REG_RIP] = target;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_flags = SA_SIGINFO;
    sa.sa_sigaction = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_sigaction = on_segv;
    sigaction(SIGSEGV, &sa, NULL);
    const unsigned long targets[] = {0x800000000000UL, 0xffff800000000000UL, 0x8000000000000000UL};
    for (int i = 0; i < 3; i++) {
        target = targets[i];
        seen = 0;
        raise(SIGUSR1);
        printf("back in main, the handler saw the address: %d\n", seen == target);
    }
    return 0;
}
