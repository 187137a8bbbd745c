// Memory calls with addresses and lengths at the end of the address space must fail as on
// Linux (same errno), not succeed or wrap around. Prints one line per case.
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void show(const char *name, long ret) {
    if (ret == -1)
        printf("%s: -1 errno %d\n", name, errno);
    else
        printf("%s: succeeded\n", name);
}

int main(void) {
    const int rw = PROT_READ | PROT_WRITE, anon = MAP_PRIVATE | MAP_ANONYMOUS;
    void *top = (void *)0xfffffffffffff000ul;
    show("mmap-fixed-last-page", (long)mmap(top, 4096, rw, anon | MAP_FIXED, -1, 0));
    show("mmap-fixed-noreplace-last-page", (long)mmap(top, 4096, rw, anon | MAP_FIXED_NOREPLACE, -1, 0));
    show("mmap-fixed-past-user-space", (long)mmap((void *)0x7ffffffff000ul, 8192, rw, anon | MAP_FIXED, -1, 0));
    show("mmap-size-max", (long)mmap(NULL, SIZE_MAX, rw, anon, -1, 0));
    show("mmap-size-max-minus-page", (long)mmap(NULL, SIZE_MAX - 4096, rw, anon, -1, 0));
    char *p = mmap(NULL, 8192, rw, anon, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    p[0] = 1;
    show("munmap-size-max", munmap(p, SIZE_MAX));
    show("munmap-last-page", munmap(top, 4096));
    show("munmap-wraps", munmap(p, (size_t)-(uintptr_t)p));
    show("mremap-new-size-max", (long)mremap(p, 8192, SIZE_MAX, MREMAP_MAYMOVE));
    show("mremap-old-size-max", (long)mremap(p, SIZE_MAX, 4096, MREMAP_MAYMOVE));
    show("madvise-size-max", madvise(p, SIZE_MAX, MADV_DONTNEED));
    printf("still mapped: %d\n", p[0]);
    long cur = syscall(SYS_brk, 0);
    printf("brk-top-unchanged: %d\n", syscall(SYS_brk, 0xfffffffffffff000ul) == cur);
    printf("brk-size-max-unchanged: %d\n", syscall(SYS_brk, -1l) == cur);
    return 0;
}
