/* mprotect's PROT_GROWSDOWN and PROT_GROWSUP as on Linux: GROWSUP (alone or with GROWSDOWN)
 * is EINVAL on x86-64; GROWSDOWN on a mapping that does not grow down is EINVAL with the
 * protection unchanged (under hrt it was applied: the page became read-only, the next write
 * SIGSEGV; with both flags, PROT_NONE); on the main stack it succeeds (glibc's executable
 * stack for a library that asks for one) and the stack stays usable. Across a hole: ENOMEM
 * with the part before the hole changed, as Linux changes mapping after mapping.
 * Usage: mprotect_grows */
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static sigjmp_buf back;
static void on_segv(int sig) { siglongjmp(back, sig); }

/* Whether a write to `p` goes through (SIGSEGV otherwise). */
static int writable(volatile char *p) {
    if (sigsetjmp(back, 1))
        return 0;
    *p = 1;
    return 1;
}

static void show(const char *what, int r) { printf("%-36s %d %s\n", what, r, r ? strerrorname_np(errno) : ""); }

int main(void) {
    char *a = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    show("GROWSDOWN, a plain mapping", mprotect(a, 4096, PROT_READ | PROT_GROWSDOWN));
    show("GROWSUP, a plain mapping", mprotect(a, 4096, PROT_READ | PROT_GROWSUP));
    show("GROWSDOWN|GROWSUP", mprotect(a, 4096, PROT_GROWSDOWN | PROT_GROWSUP));
    show("GROWSDOWN, no length", mprotect(a, 0, PROT_READ | PROT_GROWSDOWN));
    a[0] = 1;
    printf("the mapping still writable: %d\n", a[0]);
    // Across a hole: ENOMEM, with the part before the hole changed (Linux changes mapping
    // after mapping; under hrt nothing changed).
    char *h = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(h + 4096, 4096);
    show("across a hole", mprotect(h, 3 * 4096, PROT_READ));
    struct sigaction sa = {.sa_handler = on_segv};
    sigaction(SIGSEGV, &sa, NULL);
    printf("before the hole writable: %d, after it: %d\n", writable(h), writable(h + 2 * 4096));
    char here;
    unsigned long page = (unsigned long)&here & ~4095UL;
    show("GROWSDOWN, the main stack", mprotect((void *)page, 4096, PROT_READ | PROT_WRITE | PROT_GROWSDOWN));
    volatile char after = 7;
    printf("the stack still usable: %d\n", after);
    return 0;
}
