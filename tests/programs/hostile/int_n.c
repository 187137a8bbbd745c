/* `int n` as on Linux: `int $3` is a breakpoint (SIGTRAP, trap 3), any other n but 0x80 a #GP that
 * names the gate (SIGSEGV, SI_KERNEL, trap 13, error n << 3 | 2). PVM raises #UD for every
 * `int n` in ring 3, and hrt reported SIGILL. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <setjmp.h>
#include <ucontext.h>
static sigjmp_buf jb;
static void h(int s, siginfo_t *si, void *u) {
    ucontext_t *uc = u;
    printf("signal %d code %d trapno %lld err %#llx\n", s, si->si_code, (long long)uc->uc_mcontext.gregs[REG_TRAPNO], (long long)uc->uc_mcontext.gregs[REG_ERR]);
    siglongjmp(jb, 1);
}
int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_sigaction = h; sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, 0); sigaction(SIGILL, &sa, 0); sigaction(SIGTRAP, &sa, 0);
    if (!sigsetjmp(jb, 1)) __asm__ volatile("int $0x41");
    if (!sigsetjmp(jb, 1)) __asm__ volatile("int $0x20");
    if (!sigsetjmp(jb, 1)) __asm__ volatile(".byte 0xcd, 0x03");
    printf("done\n");
    return 0;
}
