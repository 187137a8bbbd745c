/* Three paths a fuzzer found to take HRT's kernel down (KERNEL PANIC, hrt exit 101):
 *   mremap: mremap(MREMAP_MAYMOVE) moving a PROT_NONE mapping (private or shared, its growth in
 *     place blocked), whose bytes the kernel copied where the program maps them, not present.
 *     Checks the moved bytes and that a private mapping's grown part reads zero.
 *   jump: a call to address 2^64-1 while lazily opened memory exists (an mprotect'ed part of
 *     a large PROT_NONE reservation): the fault's look-up of lazy pages took [addr, addr+1),
 *     whose end wraps. Natively SIGSEGV (status 139).
 *   handler: a signal whose handler is a non-canonical address (a sigaction of random bytes):
 *     the return to it faulted in the kernel (#NP). Natively SIGSEGV (status 139). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static int moved(int flags, const char *what) {
    size_t len = 3 * 4096, grown = 64 * 4096;
    unsigned char *p = mmap(NULL, len + 4096, PROT_READ | PROT_WRITE, flags | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 1;
    munmap(p + len, 4096);
    for (size_t i = 0; i < len; i++)
        p[i] = (unsigned char)(i * 7 + 1);
    mprotect(p, len, PROT_NONE);
    /* Something right after it: the growth cannot stay in place. */
    void *block = mmap(p + len, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    unsigned char *q = mremap(p, len, grown, MREMAP_MAYMOVE);
    if (q == MAP_FAILED) {
        printf("%s: mremap failed\n", what);
        return 1;
    }
    mprotect(q, grown, PROT_READ);
    int same = 1, zero = 1;
    for (size_t i = 0; i < len; i++)
        same &= q[i] == (unsigned char)(i * 7 + 1);
    /* (A shared mapping's growth lies past its object: SIGBUS natively.) */
    for (size_t i = len; i < grown && flags == MAP_PRIVATE; i++)
        zero &= q[i] == 0;
    printf("%s: moved %d, bytes kept %d, growth reads zero %d\n", what, q != p, same, zero);
    munmap(q, grown);
    if (block != MAP_FAILED)
        munmap(block, 4096);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 1 && !strcmp(argv[1], "jump")) {
        char *r = mmap(NULL, 64 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        mprotect(r + (16 << 20), 32 << 20, PROT_READ | PROT_WRITE);
        printf("calling 2^64-1\n");
        void (*wild)(void) = (void (*)(void))~0UL;
        wild();
        printf("survived\n");
        return 0;
    }
    if (argc > 1 && !strcmp(argv[1], "handler")) {
        /* The kernel's struct sigaction: handler, flags, restorer, mask. */
        unsigned long act[4] = {0x0000800000001234UL, 0x04000004UL /* SA_RESTORER | SA_SIGINFO */, 0x1000, 0};
        syscall(SYS_rt_sigaction, SIGUSR1, act, NULL, 8);
        printf("raising SIGUSR1\n");
        raise(SIGUSR1);
        printf("survived\n");
        return 0;
    }
    return moved(MAP_PRIVATE, "private") | moved(MAP_SHARED, "shared");
}
