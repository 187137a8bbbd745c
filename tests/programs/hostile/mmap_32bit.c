/* mmap with MAP_32BIT places the mapping within the lowest 2 GiB, as Linux does on x86-64
 * (JITs that need 32-bit code addresses ask for it; the kernel's x86 selftest fsgsbase_restore
 * too); a free hint there is honoured. Under hrt the flag was ignored (0x100000000 and up).
 * Usage: mmap_32bit */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

int main(void) {
    int low = 0;
    for (int i = 0; i < 6; i++) {
        size_t len = (size_t)4096 << (2 * i);
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE | (i % 2 ? PROT_EXEC : 0),
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
        if (p == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
        memset(p, 0x5a, len);
        low += (uintptr_t)p + len <= 0x80000000UL;
        munmap(p, len);
    }
    printf("6 MAP_32BIT mappings, %d of them within the lowest 2 GiB\n", low);
    /* A hint in the low 2 GiB that is free: taken where Linux would take it. */
    char *probe = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    munmap(probe, 1 << 20);
    char *again = mmap(probe, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    printf("a free low hint is honoured: %d\n", again == probe);
    return 0;
}
