// Closed standard descriptors and argument checks of forwarded calls. Results go to stderr as
// "case NAME: RESULT" lines (stdout may be closed). argv[1]: "out" (started with stdout closed),
// "in" (stdin closed) or "open" (all open).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static void report(const char *name, long r) {
    if (r < 0)
        dprintf(2, "case %s: -1 %s\n", name, strerrorname_np(errno));
    else
        dprintf(2, "case %s: %ld\n", name, r);
}

// A buffer low in memory: a forwarder that shortens SIZE_MAX to 2 GiB finds that much program
// memory after it and writes it; Linux answers EFAULT.
static char low[16];

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "open";
    char buf[16] = "x";
    if (strcmp(mode, "out") == 0)
        report("write(1) with stdout closed", write(1, buf, 1));
    if (strcmp(mode, "in") == 0)
        report("read(0) with stdin closed", read(0, buf, 1));
    // The lowest free number: a closed standard descriptor is reused, as on Linux.
    int null = open("/dev/null", O_RDWR);
    report("open(/dev/null)", null);
    int self = open(argv[0], O_RDONLY);
    errno = 0;
    report("ioctl(file, TCGETS, NULL)", ioctl(self, TCGETS, NULL));
    report("ioctl(file, TIOCGWINSZ, NULL)", ioctl(self, TIOCGWINSZ, NULL));
    size_t huge = SIZE_MAX;
    __asm__("" : "+r"(huge)); // keep the compiler from diagnosing the size
    report("write(null, stack, SIZE_MAX)", write(null, buf, huge));
    report("write(null, static, SIZE_MAX)", write(null, low, huge));
    report("read(self, stack, SIZE_MAX)", read(self, buf, huge));
    report("write(null, buf, 4)", write(null, buf, 4));
    return 0;
}
