/* System calls made with the trap flag (TF), the nested-task flag (NT) and alignment checking
 * (AC) set in the program's flags, as the Linux kernel's x86 selftest syscall_nt makes them,
 * 40 times each so that hrt rewrites the call site into a direct call: every call returns
 * (a SIGTRAP handler takes the single-step traps). Under hrt the rewritten call entered the
 * kernel with those flags and the kernel panicked (#DB, or #GP with NT).
 * Usage: syscall_with_user_flags */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile long traps;
static void on_trap(int sig) {
    (void)sig;
    traps++;
}

static long getpid_with(unsigned long flags) {
    long ret;
    __asm__ volatile("pushfq\n\t"
                     "orq %[flags], (%%rsp)\n\t"
                     "popfq\n\t"
                     "syscall\n\t"
                     "pushfq\n\t"
                     "andq %[keep], (%%rsp)\n\t"
                     "popfq"
                     : "=a"(ret)
                     : "a"((long)SYS_getpid), [flags] "r"(flags), [keep] "r"(~(0x100UL | 0x4000UL | 0x40000UL))
                     : "rcx", "r11", "memory", "cc");
    return ret;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_trap;
    sigaction(SIGTRAP, &sa, NULL);
    const struct {
        const char *name;
        unsigned long flags;
    } sets[] = {{"TF", 0x100}, {"NT", 0x4000}, {"AC", 0x40000}, {"NT|AC|TF", 0x100 | 0x4000 | 0x40000}};
    for (unsigned s = 0; s < sizeof sets / sizeof *sets; s++) {
        int right = 0;
        for (int i = 0; i < 40; i++)
            right += getpid_with(sets[s].flags) == getpid();
        printf("%-9s 40 calls, %d returned the pid\n", sets[s].name, right);
    }
    printf("single-step traps taken: %s\n", traps > 0 ? "some" : "none");
    return 0;
}
