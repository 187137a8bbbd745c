// The main thread's stack as the program sees it: glibc's pthread_getattr_np reads
// /proc/self/maps to size it (RLIMIT_STACK, less what lies above the stack's end); programs
// bound their recursion by that size. The size must hold this frame and lie within the limit,
// /proc/self/maps must have a [stack] line holding the frame and a [vdso] line, and a
// recursion three quarters as deep as the reported size must run (it would overrun the real
// stack if the size were too large). Compared with the native run.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

static uintptr_t lowest;

// Recurses until the frames reach `floor`; each frame keeps 1 KiB the compiler cannot drop.
static __attribute__((noinline)) int dive(uintptr_t floor, int depth) {
    volatile char pad[1024];
    memset((char *)pad, depth & 0xff, sizeof pad);
    uintptr_t here = (uintptr_t)pad;
    if (here < lowest)
        lowest = here;
    if (here <= floor)
        return pad[0];
    return dive(floor, depth + 1) + pad[1];
}

int main(void) {
    int local = 0;
    uintptr_t me = (uintptr_t)&local;
    pthread_attr_t a;
    void *addr;
    size_t size;
    pthread_getattr_np(pthread_self(), &a);
    pthread_attr_getstack(&a, &addr, &size);
    uintptr_t lo = (uintptr_t)addr, hi = lo + size;
    struct rlimit rl;
    getrlimit(RLIMIT_STACK, &rl);
    printf("main stack holds this frame: %s\n", me >= lo && me < hi ? "yes" : "no");
    printf("its size within RLIMIT_STACK, above half of it: %s\n",
           size <= rl.rlim_cur && size > rl.rlim_cur / 2 ? "yes" : "no");
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int stack_line = 0, vdso_line = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long from, to;
        if (sscanf(line, "%lx-%lx", &from, &to) != 2)
            continue;
        if (strstr(line, "[stack]") && me >= from && me < to)
            stack_line = 1;
        if (strstr(line, "[vdso]"))
            vdso_line = 1;
    }
    printf("/proc/self/maps: [stack] holds this frame: %s, [vdso]: %s\n", stack_line ? "yes" : "no",
           vdso_line ? "yes" : "no");
    lowest = me;
    dive(hi - size / 4 * 3, 0);
    printf("recursion to three quarters of it: done (%s)\n", lowest <= hi - size / 4 * 3 ? "reached" : "short");
    return 0;
}
