/* A program that wedges its vCPU: one ring lets it write its kernel's per-CPU data, and it
 * sets the kernel's software interrupt flag (GS:32 with the kernel in ring 3, where CLI
 * faults) and spins. The kernel then takes nothing on that vCPU, not even a signal sent to
 * hrt; a Ctrl-C must still stop hrt. Only meaningful under hrt with the kernel in
 * ring 3 (natively GS is 0 and the write faults).
 *
 * Once wedged it writes 'w' into the file named by its argument, through a shared mapping (a
 * system call would unmask the flag), so that a test knows when to send its signals. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    int fd = open(argv[1], O_RDWR | O_CREAT, 0644);
    if (fd < 0 || ftruncate(fd, 4096) != 0)
        return 3;
    volatile char *p = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return 4;
    __asm__ volatile("movq $1, %%gs:32" ::: "memory");
    p[0] = 'w';
    for (;;)
        __asm__ volatile("movq $1, %%gs:32\n\tpause" ::: "memory");
}
