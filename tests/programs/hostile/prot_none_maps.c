// Anonymous mappings made PROT_NONE (as glibc reserves a thread's stack before it opens all but
// the guard page): a touch faults, `mprotect` makes them read zero, and a new PROT_NONE mapping
// over recycled memory faults again and reads zero once accessible. Plain, MAP_STACK and
// small mappings; the output must match a native run.
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

static sigjmp_buf jump;

static void on_segv(int sig) {
    (void)sig;
    siglongjmp(jump, 1);
}

/// 1 if reading `p` faults.
static int faults(volatile char *p) {
    if (sigsetjmp(jump, 1) == 0) {
        (void)*p;
        return 0;
    }
    return 1;
}

static long nonzero(const char *m, size_t len) {
    long n = 0;
    for (size_t i = 0; i < len; i += 512) {
        n += m[i] != 0;
    }
    return n;
}

int main(void) {
    signal(SIGSEGV, on_segv);
    const char *names[] = {"8 MiB + 4 KiB", "8 MiB + 4 KiB, MAP_STACK", "12 KiB"};
    for (int k = 0; k < 3; k++) {
        size_t len = k == 2 ? 3 * 4096 : 0x801000;
        int extra = k == 1 ? MAP_STACK : 0;
        char *m = mmap(0, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | extra, -1, 0);
        if (m == MAP_FAILED) {
            perror("mmap");
            return 1;
        }
        int before = faults(m + len - 1) + faults(m);
        mprotect(m, len, PROT_READ | PROT_WRITE);
        long zero = nonzero(m, len);
        memset(m, 0x5a, len);
        mprotect(m, len, PROT_NONE);
        int again = faults(m);
        munmap(m, len);
        char *n = mmap(0, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | extra, -1, 0);
        int fresh = faults(n + 100);
        mprotect(n, len, PROT_READ);
        printf("%s: faults before %d, nonzero after mprotect %ld, faults once PROT_NONE again %d, "
               "a new mapping faults %d, reads nonzero %ld\n",
               names[k], before, zero, again, fresh, nonzero(n, len));
        munmap(n, len);
    }
    return 0;
}
