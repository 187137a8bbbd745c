/* A MAP_FIXED private file mapping that Linux refuses (a pipe's descriptor: ENODEV, a
 * directory's: ENODEV, a closed one: EBADF) leaves the memory it would have replaced as it
 * was. Until stop 98 hrt checked some descriptors only after the replacement: the page was
 * gone. Prints each answer and the page's byte; the same on any machine. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <fcntl.h>
int main(void) {
    int p[2]; pipe(p);
    int dir = open("/tmp", O_RDONLY | O_DIRECTORY);
    unsigned char *a = mmap(0, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(a, 0xab, 4 * 4096);
    int fds[] = {p[0], dir, 999};
    const char *names[] = {"pipe", "directory", "closed"};
    for (int i = 0; i < 3; i++) {
        void *r = mmap(a + 4096, 4096, PROT_READ, MAP_PRIVATE | MAP_FIXED, fds[i], 0);
        setvbuf(stdout, 0, _IONBF, 0); printf("%s: %s, page still %02x\n", names[i], r == MAP_FAILED ? strerror(errno) : "mapped", r == MAP_FAILED ? a[4096] : 0);
    }
    return 0;
}
