// fchmodat2 (Linux 6.6; glibc 2.39's fchmodat with flags calls it): plain, with
// AT_SYMLINK_NOFOLLOW on a file and on a symbolic link (whose own mode Linux's file systems do
// not change: EOPNOTSUPP), with AT_EMPTY_PATH on a descriptor, an unknown flag (EINVAL) and a
// missing file (ENOENT). Prints each answer and the file's mode after it. Then the inode-flag
// ioctls (`lsattr`, `chattr`): FS_IOC_GETFLAGS, SETFLAGS (noatime on and off) and GETVERSION
// (whose value differs from file to file: only its answer is printed).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static char dir[] = "/tmp/hrt-fchmodat2-XXXXXX";

static void try(const char *what, int dirfd, const char *path, int mode, int flags) {
    long r = syscall(452, dirfd, path, mode, flags);
    struct stat st;
    int e = errno;
    int s = fstatat(AT_FDCWD, "f", &st, 0);
    printf("%s: %ld %s, mode %o\n", what, r, r < 0 ? strerrorname_np(e) : "", s == 0 ? st.st_mode & 07777 : 0);
}

int main(void) {
    if (!mkdtemp(dir) || chdir(dir) != 0) {
        perror("mkdtemp");
        return 1;
    }
    int fd = open("f", O_CREAT | O_RDWR, 0600);
    symlink("f", "link");
    try("plain", AT_FDCWD, "f", 0640, 0);
    try("nofollow on a file", AT_FDCWD, "f", 0604, AT_SYMLINK_NOFOLLOW);
    try("nofollow on a link", AT_FDCWD, "link", 0777, AT_SYMLINK_NOFOLLOW);
    try("through a link", AT_FDCWD, "link", 0644, 0);
    try("empty path", fd, "", 0600, AT_EMPTY_PATH);
    try("unknown flag", AT_FDCWD, "f", 0777, 0x8000);
    try("missing", AT_FDCWD, "nothing", 0777, 0);
    int flags = 0, version = 0;
    int g = ioctl(fd, FS_IOC_GETFLAGS, &flags);
    int e = errno;
    printf("getflags: %d %s\n", g, g < 0 ? strerrorname_np(e) : "");
    if (g == 0) {
        int with = flags | FS_NOATIME_FL;
        int r1 = ioctl(fd, FS_IOC_SETFLAGS, &with);
        int again = 0;
        ioctl(fd, FS_IOC_GETFLAGS, &again);
        int r2 = ioctl(fd, FS_IOC_SETFLAGS, &flags);
        printf("setflags: %d %d, noatime %d\n", r1, r2, (again & FS_NOATIME_FL) != 0);
    }
    g = ioctl(fd, FS_IOC_GETVERSION, &version);
    e = errno;
    printf("getversion: %d %s\n", g, g < 0 ? strerrorname_np(e) : "");
    unlink("link");
    unlink("f");
    chdir("/");
    rmdir(dir);
    printf("fchmodat2: done\n");
    return 0;
}
