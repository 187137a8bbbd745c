// close_range (it was ENOSYS; Python's subprocess, glibc's closefrom and OpenSSH call it):
// closing a range of the program's descriptors, ranges past the last one and to ~0U, marking
// a range FD_CLOEXEC, CLOSE_RANGE_UNSHARE, and the error cases. Compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static long cr(unsigned first, unsigned last, unsigned flags) {
    return syscall(SYS_close_range, first, last, flags);
}

#define SHOW_WIDTH 32
#include "show.h"

// Which of descriptors 3..15 are open, and which of them have FD_CLOEXEC.
static void state(const char *what) {
    printf("%-32s", what);
    for (int fd = 3; fd < 16; fd++) {
        int f = fcntl(fd, F_GETFD);
        printf(" %s", f < 0 ? "-" : (f & FD_CLOEXEC) ? "c" : "o");
    }
    printf("\n");
}

int main(void) {
    for (int i = 0; i < 10; i++)
        open("/dev/null", O_RDONLY);
    state("ten open");
    show("close_range(5, 6, 0)", cr(5, 6, 0));
    state("after");
    show("close_range(8, 9, CLOEXEC)", cr(8, 9, CLOSE_RANGE_CLOEXEC));
    state("after");
    show("close_range(10, 10, UNSHARE)", cr(10, 10, CLOSE_RANGE_UNSHARE));
    state("after");
    show("close_range(200, 300, 0)", cr(200, 300, 0));
    show("close_range(7, 5, 0)", cr(7, 5, 0));
    show("close_range(3, 4, 0x80)", cr(3, 4, 0x80));
    state("after the errors");
    show("close_range(11, ~0U, 0)", cr(11, ~0U, 0));
    state("after");
    show("close_range(3, ~0U, 0)", cr(3, ~0U, 0));
    state("after");
    printf("stdout still open: %d\n", fcntl(1, F_GETFD) >= 0);
    return 0;
}
