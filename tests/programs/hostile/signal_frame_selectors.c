/* A 64-bit signal frame names the code and stack selectors the program runs with (Linux: CS
 * 0x33, SS 0x2b, and uc_flags with UC_SIGCONTEXT_SS and UC_STRICT_RESTORE_SS), the same as the
 * live registers in the handler. Under hrt the frame said 0x23 and 0x1b, which a handler
 * reads as 32-bit code (the Linux kernel's x86 selftest sigreturn).
 * Usage: signal_frame_selectors */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

static void handler(int sig, siginfo_t *info, void *context) {
    (void)sig;
    (void)info;
    ucontext_t *uc = context;
    unsigned short cs, ss;
    __asm__ volatile("mov %%cs, %0; mov %%ss, %1" : "=r"(cs), "=r"(ss));
    unsigned long segs = uc->uc_mcontext.gregs[REG_CSGSFS];
    printf("uc_flags SS bits %#lx, frame cs %#lx ss %#lx, the same as the live ones: %d\n", uc->uc_flags & 6,
           segs & 0xffff, (segs >> 48) & 0xffff, (segs & 0xffff) == cs && ((segs >> 48) & 0xffff) == ss);
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    raise(SIGUSR1);
    return 0;
}
