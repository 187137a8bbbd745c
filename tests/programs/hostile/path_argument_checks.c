// Arguments Linux checks before it looks a path up (hrt walked the path first and answered
// ENOENT, EBADF or ENOTDIR): renameat2's unknown or clashing flags and unlinkat's unknown ones
// (EINVAL), truncate's negative length (EINVAL), and utimensat with both times UTIME_OMIT
// (0: nothing to do, the path not even looked at). No path here exists: nothing is changed.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static void said(const char *what, long r) {
    printf("%-36s %ld %s\n", what, r, r < 0 ? strerror(errno) : "");
}

#define MISSING "hrt-test-no-such-dir/a"

int main(void) {
    said("renameat2 unknown flag", syscall(SYS_renameat2, AT_FDCWD, MISSING, AT_FDCWD, MISSING "b", 8));
    said("renameat2 NOREPLACE|EXCHANGE", syscall(SYS_renameat2, AT_FDCWD, MISSING, AT_FDCWD, MISSING "b", 3));
    said("renameat2 EXCHANGE|WHITEOUT", syscall(SYS_renameat2, AT_FDCWD, MISSING, AT_FDCWD, MISSING "b", 6));
    said("renameat2 NOREPLACE", syscall(SYS_renameat2, AT_FDCWD, MISSING, AT_FDCWD, MISSING "b", 1));
    said("unlinkat unknown flag", syscall(SYS_unlinkat, AT_FDCWD, MISSING, 1));
    said("unlinkat AT_REMOVEDIR", syscall(SYS_unlinkat, AT_FDCWD, MISSING, AT_REMOVEDIR));
    said("truncate -1", syscall(SYS_truncate, MISSING, -1L));
    said("truncate 0", syscall(SYS_truncate, MISSING, 0L));
    struct timespec omit[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
    said("utimensat both omitted, missing", syscall(SYS_utimensat, AT_FDCWD, MISSING, omit, 0));
    said("utimensat both omitted, closed fd", syscall(SYS_utimensat, 999, "x", omit, 0));
    said("utimensat both omitted, bad flags", syscall(SYS_utimensat, AT_FDCWD, MISSING, omit, 0x7000));
    struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
    said("utimensat one now, missing", syscall(SYS_utimensat, AT_FDCWD, MISSING, now, 0));
    printf("path argument checks: done\n");
    return 0;
}
