/* A stack walk (_Unwind_Backtrace, as profilers and crash handlers make) from a SIGPROF handler
 * whose signal interrupted the vDSO's clock_gettime reaches main, as on Linux, whose vDSO has
 * unwind tables and PT_GNU_EH_FRAME (hrt's had neither: every such walk stopped in the vDSO). */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unwind.h>

int main(void);
static volatile int in_vdso, reached_main;
static uintptr_t lo, hi;

static _Unwind_Reason_Code frame(struct _Unwind_Context *c, void *arg) {
    if (_Unwind_FindEnclosingFunction((void *)_Unwind_GetIP(c)) == (void *)main) *(int *)arg = 1;
    return _URC_NO_REASON;
}

static void sampled(int sig, siginfo_t *si, void *uc) {
    (void)sig;
    (void)si;
    uintptr_t ip = ((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
    if (ip < lo || ip >= hi) return;
    int found = 0;
    _Unwind_Backtrace(frame, &found);
    in_vdso++;
    reached_main += found;
}

int main(void) {
    ElfW(Ehdr) *e = (ElfW(Ehdr) *)getauxval(AT_SYSINFO_EHDR);
    if (!e) return 1;
    ElfW(Phdr) *ph = (ElfW(Phdr) *)((char *)e + e->e_phoff);
    int eh = 0;
    for (int i = 0; i < e->e_phnum; i++) {
        eh |= ph[i].p_type == PT_GNU_EH_FRAME;
        if (ph[i].p_type == PT_LOAD) {
            lo = (uintptr_t)e + ph[i].p_vaddr;
            hi = lo + ph[i].p_memsz;
        }
    }
    printf("the vDSO has PT_GNU_EH_FRAME: %s\n", eh ? "yes" : "no");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = sampled;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigaction(SIGPROF, &sa, 0);
    struct itimerval it = {{0, 1000}, {0, 1000}};
    setitimer(ITIMER_PROF, &it, 0);
    struct timespec ts, start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do clock_gettime(CLOCK_MONOTONIC, &ts);
    while (in_vdso < 20 && ts.tv_sec - start.tv_sec < 60);
    memset(&it, 0, sizeof it);
    setitimer(ITIMER_PROF, &it, 0);
    if (in_vdso < 20) {
        printf("too few samples in the vDSO\n");
        return 1;
    }
    printf("samples in the vDSO whose stack walk reached main: %s\n",
           reached_main == in_vdso ? "all" : reached_main ? "some" : "none");
    return 0;
}
