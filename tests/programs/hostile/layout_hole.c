/* Addresses in the hole a PC leaves below 4 GiB (IOAPIC 0xFEC00000, local APIC 0xFEE00000,
 * and the start of the hole at 3 GiB) are not the program's memory: system calls given them
 * fail with EFAULT and a store there is a segmentation fault, as on Linux where nothing is
 * mapped there. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void report(const char *what, long r) {
    printf("%s: %ld %s\n", what, r, r < 0 ? strerror(errno) : "");
    fflush(stdout);
}

int main(void) {
    const unsigned long addrs[] = {0xc0000000UL, 0xfec00000UL, 0xfee00000UL, 0xfffff000UL};
    int p[2];
    if (pipe(p) != 0) return 2;
    for (int i = 0; i < 4; i++) {
        void *a = (void *)addrs[i];
        char name[64];
        snprintf(name, sizeof name, "%#lx clock_gettime", addrs[i]);
        report(name, syscall(SYS_clock_gettime, CLOCK_REALTIME, a));
        snprintf(name, sizeof name, "%#lx getrandom", addrs[i]);
        report(name, syscall(SYS_getrandom, a, 16, 0));
        snprintf(name, sizeof name, "%#lx write from", addrs[i]);
        report(name, write(p[1], a, 16));
        if (write(p[1], "0123456789abcdef", 16) != 16) return 3;
        snprintf(name, sizeof name, "%#lx read into", addrs[i]);
        report(name, read(p[0], a, 16));
        char drain[16];
        if (read(p[0], drain, 16) != 16) report("drain", -1);
    }
    printf("storing to the local APIC's page\n");
    fflush(stdout);
    *(volatile int *)0xfee000b0UL = 0;
    printf("the store returned\n");
    return 0;
}
