/* Single-steps itself (TF set with POPF, a SIGTRAP handler counting the traps) over calls of
 * libc's getppid and write wrappers, after 1,000 calls of each: under hrt their sites have been
 * rewritten into calls by then. Natively each step goes over the SYSCALL, and every trap is
 * taken in the program's own code or its libraries'; the count is the same run after run.
 * Until stop 98 a rewritten call let the steps into the kernel's gate: ~40 more traps a call,
 * with addresses in memory the program never mapped. Prints the count and how many traps were
 * outside the program's mapped files (/proc/self/maps); the same on any machine. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

#define MAX_RIPS 4096

static volatile long traps;
static unsigned long rips[MAX_RIPS];

static void on_trap(int sig, siginfo_t *si, void *context) {
    (void)sig;
    (void)si;
    ucontext_t *uc = context;
    if (traps < MAX_RIPS)
        rips[traps] = (unsigned long)uc->uc_mcontext.gregs[REG_RIP];
    traps++;
}

static int null_fd;

__attribute__((noinline)) static long work(void) {
    return getppid() + write(null_fd, "x", 1);
}

/* Whether `rip` lies in an executable mapping of a file (the program, ld.so, libc). */
static int in_mapped_file(unsigned long rip) {
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8];
        int path = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &path) >= 3)
            found = rip >= lo && rip < hi && perms[2] == 'x' && path > 0 && line[path] == '/';
    }
    fclose(f);
    return found;
}

int main(void) {
    null_fd = open("/dev/null", O_WRONLY);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_trap;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGTRAP, &sa, NULL);
    long sum = 0;
    for (int i = 0; i < 1000; i++)
        sum += work();
    for (int round = 0; round < 3; round++) {
        __asm__ volatile("pushf; orq $0x100, (%%rsp); popf" ::: "memory", "cc");
        sum += work();
        __asm__ volatile("pushf; andq $~0x100, (%%rsp); popf" ::: "memory", "cc");
    }
    long outside = 0, n = traps < MAX_RIPS ? traps : MAX_RIPS;
    for (long i = 0; i < n; i++)
        outside += !in_mapped_file(rips[i]);
    printf("single-step traps over 3 calls of each wrapper: %ld, outside the program's files: %ld\n", traps, outside);
    printf("calls: %s\n", sum == 1003L * (getppid() + 1) ? "as expected" : "wrong");
    return 0;
}
