// Synchronous signals from faults delivered to handlers: a SIGSEGV handler that recovers
// through mprotect (the way garbage collectors do), siglongjmp out of SIGFPE, a SIGILL handler
// that skips ud2 by changing the saved RIP, a SIGTRAP handler for the program's own int3 (the
// kernel's gates in ring-3 mode are int3 too), and si_addr/si_code of each. `sig_faults CASE`.
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "handler.h"

static char *page;
static long pagesize;
static volatile int faults, addr_ok, code_seen;
static sigjmp_buf env;
static void *volatile trap_end; // the address just past the case's int3

static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)uc;
    faults++;
    addr_ok = (char *)si->si_addr >= page && (char *)si->si_addr < page + pagesize;
    code_seen = si->si_code;
    if (!addr_ok)
        _exit(3);
    mprotect(page, pagesize, PROT_READ | PROT_WRITE);
}

static void on_fpe(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    printf("SIGFPE sig=%d si_code=%d\n", sig, si->si_code);
    siglongjmp(env, 1);
}

static void on_ill(int sig, siginfo_t *si, void *uc_) {
    ucontext_t *uc = uc_;
    greg_t rip = uc->uc_mcontext.gregs[REG_RIP];
    printf("SIGILL sig=%d si_code=%d addr_is_rip=%d\n", sig, si->si_code, (greg_t)si->si_addr == rip);
    uc->uc_mcontext.gregs[REG_RIP] = rip + 2; // skip the 2-byte ud2
}

static void on_trap(int sig, siginfo_t *si, void *uc_) {
    ucontext_t *uc = uc_;
    greg_t rip = uc->uc_mcontext.gregs[REG_RIP];
    printf("SIGTRAP sig=%d si_code=%d rip_after_int3=%d\n", sig, si->si_code, rip == (greg_t)trap_end);
}

static void on_segv_unmapped(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    printf("SIGSEGV sig=%d si_code=%d addr=%#lx\n", sig, si->si_code, (unsigned long)si->si_addr);
    siglongjmp(env, 1);
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "mprotect";
    setvbuf(stdout, NULL, _IONBF, 0);
    pagesize = sysconf(_SC_PAGESIZE);
    if (!strcmp(c, "mprotect")) {
        page = mmap(NULL, 4 * pagesize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        page += pagesize;
        set_info_handler(SIGSEGV, on_segv, 0);
        for (int round = 0; round < 3; round++) {
            mprotect(page, pagesize, PROT_NONE);
            page[round] = (char)(round + 1); // faults; the handler opens the page; the store retries
            printf("round %d: faults=%d addr_ok=%d si_code=%d value=%d\n", round, faults, addr_ok, code_seen,
                   page[round]);
        }
        mprotect(page, pagesize, PROT_READ);
        volatile char r = page[0];
        page[1] = r; // write to a read-only page: the handler opens it again
        printf("read-only write: faults=%d si_code=%d value=%d\n", faults, code_seen, page[1]);
    } else if (!strcmp(c, "fpe")) {
        set_info_handler(SIGFPE, on_fpe, 0);
        volatile int zero = 0, x = 7;
        for (int i = 0; i < 2; i++) {
            if (sigsetjmp(env, 1) == 0) {
                x = x / zero;
                printf("not reached\n");
            } else {
                printf("back from SIGFPE %d\n", i);
            }
        }
        // The mask was restored by siglongjmp: a third one is delivered too.
        sigset_t now;
        sigprocmask(SIG_SETMASK, NULL, &now);
        printf("SIGFPE blocked after siglongjmp=%d\n", sigismember(&now, SIGFPE));
    } else if (!strcmp(c, "ud2")) {
        set_info_handler(SIGILL, on_ill, 0);
        __asm__ volatile("ud2");
        printf("after ud2\n");
        __asm__ volatile("ud2");
        printf("after the second ud2\n");
    } else if (!strcmp(c, "int3")) {
        set_info_handler(SIGTRAP, on_trap, 0);
        for (int round = 0; round < 3; round++) {
            trap_end = &&after;
            __asm__ volatile("int3");
        after:
            printf("after int3 %d\n", round);
        }
        signal(SIGTRAP, SIG_DFL);
        printf("int3 without a handler\n");
        __asm__ volatile("int3");
        printf("not reached\n");
    } else if (!strcmp(c, "unmapped")) {
        set_info_handler(SIGSEGV, on_segv_unmapped, 0);
        if (sigsetjmp(env, 1) == 0) {
            *(volatile int *)0x10 = 1;
        }
        printf("recovered\n");
    } else if (!strcmp(c, "blocked")) {
        // A synchronous fault while its signal is blocked kills, as Linux forces it.
        set_info_handler(SIGSEGV, on_segv_unmapped, 0);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGSEGV);
        sigprocmask(SIG_BLOCK, &set, NULL);
        printf("faulting with SIGSEGV blocked\n");
        *(volatile int *)0x10 = 1;
        printf("not reached\n");
    } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    return 0;
}
