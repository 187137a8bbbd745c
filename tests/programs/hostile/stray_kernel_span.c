// Touches the addresses given as arguments (hexadecimal), each expected to be memory the
// program was never given: a read, a write, and a system call with a buffer there. Under hrt
// the test passes addresses in the kernel's share of RAM that KVM does not know yet; natively
// nothing is mapped there either. Each must be SIGSEGV at the address (SEGV_MAPERR) or EFAULT.
#include "probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    probe_setup();
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return 1;
    int zero = open("/dev/zero", O_RDONLY);
    for (int i = 1; i < argc; i++) {
        volatile unsigned char *p = (volatile unsigned char *)strtoull(argv[i], NULL, 16);
        char what[32];
        snprintf(what, sizeof what, "address %d", i);
        probe(what, p, 0);
        probe(what, p, 1);
        errno = 0;
        long w = write(pipefd[1], (const void *)p, 16);
        printf("%s write(2) from it: %ld errno %d\n", what, w, w < 0 ? errno : 0);
        errno = 0;
        long r = read(zero, (void *)p, 16);
        printf("%s read(2) into it: %ld errno %d\n", what, r, r < 0 ? errno : 0);
    }
    printf("done\n");
    return 0;
}
