/* Names under /proc/self/fd and /dev/fd that are no descriptor's number (a leading zero, a
 * sign, trailing junk, out of range, a closed descriptor) are not there: ENOENT, as procfs
 * says (the kernel's proc selftest fd-001-lookup). Under hrt, "01" and "0000000" named
 * descriptor 1 and 0, and the others gave EACCES.
 * Usage: proc_fd_names */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static void look(const char *path) {
    struct stat st;
    errno = 0;
    int r = lstat(path, &st);
    printf("%-28s %s\n", path, r == 0 ? (S_ISLNK(st.st_mode) ? "a link" : "not a link") : strerrorname_np(errno));
}

int main(void) {
    const char *names[] = {"1", "01", "0000000", "+1", "1x", "-1", "4294967296", "2147483647", "999"};
    for (unsigned i = 0; i < sizeof names / sizeof *names; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%s", names[i]);
        look(path);
        snprintf(path, sizeof path, "/dev/fd/%s", names[i]);
        look(path);
    }
    look("/proc/self/fdinfo/01");
    look("/proc/self/fdinfo/x");
    return 0;
}
