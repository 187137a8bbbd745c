// Forwarded calls into PROT_NONE memory fail with EFAULT as on Linux (the monitor writes guest
// memory itself, so the page tables alone do not stop it), and work again after mprotect.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void show(const char *what, long r) {
    printf("%s: %ld %s\n", what, r, r < 0 ? strerror(errno) : "");
}

int main(void) {
    int zero = open("/dev/zero", O_RDONLY), fds[2];
    if (pipe(fds) != 0)
        return 1;
    char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || zero < 0)
        return 1;
    memset(p, 'x', 3 * 4096);
    show("mprotect none", mprotect(p + 4096, 4096, PROT_NONE));
    show("read into none", read(zero, p + 4096, 16));
    show("read across into none", read(zero, p, 8192));
    // (Not /dev/null: its write never reads the buffer, so Linux succeeds there.)
    show("write from none", write(fds[1], p + 4096, 16));
    show("stat into none", fstat(zero, (void *)(p + 4096)));
    show("mprotect back", mprotect(p + 4096, 4096, PROT_READ | PROT_WRITE));
    show("read again", read(zero, p + 4096, 16));
    printf("byte after: %d\n", p[4096]);
    char *q = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    show("read into fresh none", read(zero, q, 16));
    return 0;
}
