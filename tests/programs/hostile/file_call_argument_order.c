/* File calls given a bad flag or argument and a bad descriptor or path at once answer the
 * argument's error, as Linux checks arguments first (hrt looked the descriptor or path up
 * first: EBADF, ENOTDIR); copy_file_range's descriptors come before its flags. Also: fstatat
 * of a NULL path with AT_EMPTY_PATH is the descriptor or working directory (Linux 6.11; it
 * was EFAULT), vmsplice refuses unknown flags, and a count negative as ssize_t is EINVAL for
 * sendfile and splice, a copy_file_range past 2^64 bytes EOVERFLOW (all three copied data). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "scratch.h"

#define SHOW(label, call)                                                                 \
    do {                                                                                  \
        errno = 0;                                                                        \
        long r_ = (long)(call);                                                           \
        printf("%s: %ld (%s)\n", label, r_, r_ < 0 ? strerror(errno) : "Success");      \
    } while (0)

int main(void) {
    char dir[] = "/tmp/hrt-argorder-XXXXXX";
    if (enter_scratch(dir))
        return 1;
    struct stat st, cwd;
    int f = open("f", O_CREAT | O_RDWR, 0644); /* a regular file, used as a directory fd */

    /* A bad flag or argument, and a bad descriptor or path. */
    SHOW("fstatat(-1, \"x\", AT_REMOVEDIR)", fstatat(-1, "x", &st, AT_REMOVEDIR));
    SHOW("utimensat(f, \"x\", NULL, AT_NO_AUTOMOUNT)", utimensat(f, "x", NULL, AT_NO_AUTOMOUNT));
    SHOW("utimensat(f, NULL, NULL, AT_SYMLINK_NOFOLLOW)", syscall(SYS_utimensat, f, NULL, NULL, AT_SYMLINK_NOFOLLOW));
    SHOW("mknodat(-1, \"a\", S_IFDIR)", mknodat(-1, "a", S_IFDIR | 0755, 0));
    SHOW("mknodat(-1, \"a\", an unknown type)", mknodat(-1, "a", 0170000 | 0755, 0));
    SHOW("openat(-1, \"e\", O_RDONLY | O_TMPFILE)", openat(-1, "e", O_RDONLY | O_TMPFILE, 0));
    SHOW("openat(f, \"e\", O_CREAT | O_DIRECTORY)", openat(f, "e", O_RDONLY | O_CREAT | O_DIRECTORY, 0));
    SHOW("openat(-1, \"e\", O_PATH | O_CREAT | O_DIRECTORY)", openat(-1, "e", O_PATH | O_CREAT | O_DIRECTORY, 0));
    SHOW("fchownat(f, \"a\", AT_REMOVEDIR)", fchownat(f, "a", 0, 0, AT_REMOVEDIR));
    SHOW("faccessat(-1, \"a\", 99)", faccessat(-1, "a", 99, 0));
    SHOW("faccessat2(-1, \"a\", F_OK, 0x8000)", syscall(SYS_faccessat2, -1, "a", F_OK, 0x8000));
    SHOW("flock(-1, LOCK_NB)", flock(-1, LOCK_NB));
    SHOW("flock(-1, LOCK_MAND)", flock(-1, 32));
    SHOW("fgetxattr(-1, \"\")", fgetxattr(-1, "", NULL, 0));
    SHOW("fsetxattr(-1, \"user.a\", flags 8)", fsetxattr(-1, "user.a", "v", 1, 8));
    SHOW("fremovexattr(-1, \"\")", fremovexattr(-1, ""));
    SHOW("setxattr(\"f/x\", \"user.a\", flags 8)", setxattr("f/x", "user.a", "v", 1, 8));
    SHOW("getxattr(\"f/x\", \"\")", getxattr("f/x", "", NULL, 0));
    SHOW("inotify_add_watch(-1, \"a\", 0)", inotify_add_watch(-1, "a", 0));
    SHOW("inotify_add_watch(f, \"missing\", IN_OPEN)", inotify_add_watch(f, "missing", IN_OPEN));
    SHOW("tee(-1, -1, 1, 0x100)", tee(-1, -1, 1, 0x100));
    SHOW("tee(-1, -1, 0, 0)", tee(-1, -1, 0, 0));
    SHOW("copy_file_range(-1, NULL, -1, NULL, 1, 1)", copy_file_range(-1, NULL, -1, NULL, 1, 1));
    SHOW("renameat2(f, \"e\", AT_FDCWD, \"\", RENAME_EXCHANGE)", syscall(SYS_renameat2, f, "e", AT_FDCWD, "", 2));
    SHOW("statx(-1, \"x\", 0x80000000, 0, NULL)", syscall(SYS_statx, -1, "x", 0x80000000, 0, NULL));
    SHOW("statx(-1, \"x\", 0, STATX__RESERVED, buf)", syscall(SYS_statx, -1, "x", 0, 0x80000000u, &cwd));

    /* fstatat of a NULL path with AT_EMPTY_PATH: the descriptor, or the working directory. */
    int d = open(".", O_RDONLY);
    stat(".", &cwd);
    SHOW("newfstatat(fd, NULL, AT_EMPTY_PATH)", syscall(SYS_newfstatat, d, NULL, &st, AT_EMPTY_PATH));
    printf("  it is the directory: %d\n", st.st_ino == cwd.st_ino);
    memset(&st, 0, sizeof st);
    SHOW("newfstatat(AT_FDCWD, NULL, AT_EMPTY_PATH)", syscall(SYS_newfstatat, AT_FDCWD, NULL, &st, AT_EMPTY_PATH));
    printf("  it is the working directory: %d\n", st.st_ino == cwd.st_ino);
    SHOW("newfstatat(-1, NULL, AT_EMPTY_PATH)", syscall(SYS_newfstatat, -1, NULL, &st, AT_EMPTY_PATH));
    SHOW("newfstatat(AT_FDCWD, NULL, 0)", syscall(SYS_newfstatat, AT_FDCWD, NULL, &st, 0));
    close(d);

    /* vmsplice's flags: only SPLICE_F_MOVE, NONBLOCK, MORE and GIFT. */
    int p[2];
    pipe2(p, O_NONBLOCK);
    char hello[] = "hello";
    struct iovec v = {hello, 5};
    unsigned flags[] = {0x10, 0x100, 0x80000000u, 0xf};
    for (int i = 0; i < 4; i++) {
        char label[64];
        snprintf(label, sizeof label, "vmsplice flags %#x", flags[i]);
        SHOW(label, vmsplice(p[1], &v, 1, flags[i]));
    }
    char buf[64];
    printf("bytes in the pipe: %ld\n", (long)read(p[0], buf, sizeof buf));
    close(p[0]);
    close(p[1]);

    /* Counts negative as ssize_t, and a copy past 2^64 bytes. */
    int a = open("a", O_CREAT | O_RDWR | O_TRUNC, 0644), b = open("b", O_CREAT | O_RDWR | O_TRUNC, 0644);
    pipe(p);
    write(a, "hello world", 11);
    lseek(a, 0, SEEK_SET);
    SHOW("splice(file, pipe, (size_t)-1)", splice(a, NULL, p[1], NULL, (size_t)-1, 0));
    SHOW("splice(empty pipe, file, (size_t)-1)", splice(p[0], NULL, b, NULL, (size_t)-1, 0));
    SHOW("sendfile(b, a, NULL, (size_t)-1)", sendfile(b, a, NULL, (size_t)-1));
    off_t o = 0;
    SHOW("sendfile(b, a, &0, 1 << 63)", sendfile(b, a, &o, 0x8000000000000000UL));
    lseek(a, 5, SEEK_SET);
    SHOW("copy_file_range(a at 5, NULL, b, NULL, (size_t)-1)", copy_file_range(a, NULL, b, NULL, (size_t)-1, 0));
    loff_t lo = 0;
    SHOW("copy_file_range(a, &0, b, NULL, (size_t)-1)", copy_file_range(a, &lo, b, NULL, (size_t)-1, 0));
    fstat(b, &st);
    printf("b's size: %ld\n", (long)st.st_size);

    close(a);
    close(b);
    close(p[0]);
    close(p[1]);
    close(f);
    unlink("a");
    unlink("b");
    unlink("f");
    chdir("/");
    rmdir(dir);
    printf("argument order: done\n");
    return 0;
}
