/* A program that wedges its vCPU: one ring lets it write its kernel's per-CPU data, and it
 * sets the kernel's software interrupt flag (GS:32 with the kernel in ring 3, where CLI
 * faults) and spins. The kernel then takes nothing on that vCPU, not even a signal sent to
 * hrt; a second Ctrl-C must still stop hrt. Only meaningful under hrt with the kernel in
 * ring 3 (natively GS is 0 and the write faults). A system call unmasks the flag, so it is set
 * after "ready" is out: a signal sent before that ends the program as usual. */
#include <stdio.h>

int main(void) {
    printf("ready\n");
    fflush(stdout);
    for (;;)
        __asm__ volatile("movq $1, %%gs:32\n\tpause" ::: "memory");
}
