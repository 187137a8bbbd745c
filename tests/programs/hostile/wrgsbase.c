/* Sets the GS base with WRGSBASE (which Linux 5.9+ lets user space run where the CPU has
 * FSGSBASE, whatever AT_HWCAP2 says), makes a system call, and reads the base back. Natively it
 * prints both lines and exits 0. Under hrt the kernel runs in the program's ring with its
 * per-CPU data behind GS, so the run ends with SIGILL and a line that says why. With "high"
 * the base is a kernel-half address (as Linux's x86 syscall_arg_fault selftest sets). With a
 * second argument "spin", the program makes no system call while the base is its own: it
 * counts for a while beside a thread that counts too, so that under hrt with one vCPU the
 * kernel is entered by a preemption's timer interrupt, not by a call. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

static char block[64];
static volatile int done;

static void *count(void *arg) {
    (void)arg;
    for (volatile unsigned long n = 0; !done; n++) {
    }
    return 0;
}

int main(int argc, char **argv) {
    printf("setting the GS base\n");
    fflush(stdout);
    uint64_t want = argc > 1 && argv[1][0] == 'h' ? 0xffffffffffff0000UL : (uint64_t)block, got;
    int spin = argc > 2 && strcmp(argv[2], "spin") == 0;
    pthread_t other;
    if (spin && pthread_create(&other, 0, count, 0) != 0)
        return 1;
    __asm__ volatile("wrgsbase %0" ::"r"(want) : "memory");
    if (spin)
        for (volatile unsigned long n = 0; n < 300000000UL; n++) {
        }
    else
        (void)getppid();
    __asm__ volatile("rdgsbase %0" : "=r"(got));
    __asm__ volatile("wrgsbase %0" ::"r"(0UL) : "memory");
    done = 1;
    printf("GS base read back: %s\n", got == want ? "the same" : "different");
    return 0;
}
