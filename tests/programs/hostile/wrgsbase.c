/* Sets the GS base with WRGSBASE (which Linux 5.9+ lets user space run where the CPU has
 * FSGSBASE, whatever AT_HWCAP2 says), makes a system call, and reads the base back. Natively it
 * prints both lines and exits 0. Under hrt the kernel runs in the program's ring with its
 * per-CPU data behind GS, so the run ends with SIGILL and a line that says why. With "high"
 * the base is a kernel-half address (as Linux's x86 syscall_arg_fault selftest sets). */
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

static char block[64];

int main(int argc, char **argv) {
    printf("setting the GS base\n");
    fflush(stdout);
    uint64_t want = argc > 1 && argv[1][0] == 'h' ? 0xffffffffffff0000UL : (uint64_t)block, got;
    __asm__ volatile("wrgsbase %0" ::"r"(want) : "memory");
    (void)getppid();
    __asm__ volatile("rdgsbase %0" : "=r"(got));
    __asm__ volatile("wrgsbase %0" ::"r"(0UL) : "memory");
    printf("GS base read back: %s\n", got == want ? "the same" : "different");
    return 0;
}
