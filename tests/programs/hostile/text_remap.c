/* Moves the program's own text into fresh anonymous memory at the same address, as programs
 * that put their code in huge pages do (copy it out, map anonymous memory over it, copy it
 * back, make it executable), with no call into that code meanwhile, after and before system
 * calls of several kinds (libc's read, whose site becomes a call into a slot, getppid,
 * sysconf, a CPU-time clock). Under hrt the copy carries the rewritten sites; until stop 98
 * the first copied `call` into a slot was a stray call (SIGSEGV at address 0). Prints the
 * sums before and after; the same on any machine. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
extern char __executable_start[], etext[];
#include <fcntl.h>
#include <time.h>
/* System calls of several kinds of site: libc's read (a window replayed in a slot), getppid, clock_gettime. */
static long work(int rounds) {
    long sum = 0;
    int fd = open("/dev/zero", O_RDONLY);
    char buf[16];
    for (int r = 0; r < rounds; r++) {
        sum += read(fd, buf, sizeof buf) + (getppid() > 0) + (sysconf(_SC_NPROCESSORS_ONLN) > 0);
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    }
    close(fd);
    return sum;
}
static inline __attribute__((always_inline)) long sys6(long n, long a, long b, long c, long d, long e, long f) {
    long r;
    register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
    return r;
}
/* Moves [lo, hi) of the program's text into fresh anonymous memory at the same address (the
 * trick that puts code in huge pages), with no call into that code meanwhile. */
__attribute__((noinline, aligned(4096))) static long remap(unsigned long lo, unsigned long hi, volatile char *copy) {
    volatile char *t = (volatile char *)lo;
    for (unsigned long i = 0; i < hi - lo; i++) copy[i] = t[i];
    long p = sys6(9, lo, hi - lo, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != (long)lo) return -1;
    for (unsigned long i = 0; i < hi - lo; i++) t[i] = copy[i];
    return sys6(10, lo, hi - lo, PROT_READ | PROT_EXEC, 0, 0, 0);
}
__attribute__((noinline, aligned(4096))) static void after_remap(void) { __asm__ volatile(""); }
int main(void) {
    long a = work(50);
    unsigned long lo = ((unsigned long)__executable_start + 4095) & ~4095UL, hi = (unsigned long)etext & ~4095UL;
    unsigned long mine = (unsigned long)remap & ~4095UL, mine_end = ((unsigned long)after_remap + 4095) & ~4095UL;
    volatile char *copy = malloc(hi - lo);
    long r1 = mine > lo ? remap(lo, mine, copy) : 0;
    long r2 = hi > mine_end ? remap(mine_end, hi, copy) : 0;
    long b = work(50);
    printf("remapped: %ld %ld, sums %ld %ld\n", r1, r2, a, b);
    return 0;
}
