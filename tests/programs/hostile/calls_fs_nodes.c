// The umask (it was the kernel's own and the host never applied it: files were created 0644
// under umask 077), FIFOs and other nodes (mknod, mknodat, mkfifo: they were ENOSYS), and
// setting and removing extended attributes (setxattr, lsetxattr, fsetxattr, removexattr,
// lremovexattr, fremovexattr: ENOSYS, `cp -a` said so), file handles (name_to_handle_at). In a fresh directory under /tmp;
// compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#define SHOW_WIDTH 36
#include "show.h"

static void mode(const char *name) {
    struct stat st;
    if (lstat(name, &st) != 0)
        printf("  %-10s %s\n", name, strerror(errno));
    else
        printf("  %-10s type %06o perms %03o\n", name, st.st_mode & S_IFMT, st.st_mode & 0777);
}

int main(void) {
    char dir[] = "/tmp/hrt-nodes-XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0)
        return 1;
    printf("umask was %03o\n", umask(077));
    printf("umask now %03o\n", umask(077));
    close(open("file", O_CREAT | O_WRONLY, 0666));
    mkdir("dir", 0777);
    show("mkfifo", mkfifo("fifo", 0666));
    show("mknod S_IFIFO", mknod("fifo2", S_IFIFO | 0640, 0));
    show("mknodat S_IFREG", mknodat(AT_FDCWD, "reg", S_IFREG | 0666, 0));
    show("mknod existing", mknod("fifo", S_IFIFO | 0600, 0));
    show("mknod bad type", mknod("bad", 0170000 | 0600, 0));
    show("mknod in a missing dir", mknod("missing/x", S_IFIFO | 0600, 0));
    umask(022);
    close(open("file022", O_CREAT | O_WRONLY, 0666));
    const char *names[] = {"file", "dir", "fifo", "fifo2", "reg", "file022"};
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        mode(names[i]);
    // A FIFO works: a child writes, we read.
    if (fork() == 0) {
        int w = open("fifo", O_WRONLY);
        write(w, "through the fifo", 16);
        _exit(0);
    }
    char buf[64] = {0};
    int r = open("fifo", O_RDONLY);
    printf("fifo read: %.*s\n", (int)read(r, buf, sizeof buf), buf);
    close(r);

    // Extended attributes (user.*, if the file system takes them: the same answer either way).
    long s = setxattr("file", "user.hrt", "v1", 2, 0);
    show("setxattr", s);
    if (s == 0) {
        show("getxattr", getxattr("file", "user.hrt", buf, sizeof buf));
        show("setxattr XATTR_CREATE again", setxattr("file", "user.hrt", "v2", 2, XATTR_CREATE));
        show("setxattr XATTR_REPLACE", setxattr("file", "user.hrt", "v22", 3, XATTR_REPLACE));
        show("getxattr", getxattr("file", "user.hrt", buf, sizeof buf));
        printf("  value %.3s\n", buf);
        int fd = open("file", O_RDONLY);
        show("fsetxattr", fsetxattr(fd, "user.other", "x", 1, 0));
        show("flistxattr", flistxattr(fd, buf, sizeof buf));
        show("fremovexattr", fremovexattr(fd, "user.other"));
        show("fremovexattr again", fremovexattr(fd, "user.other"));
        close(fd);
        show("removexattr", removexattr("file", "user.hrt"));
        show("getxattr after removal", getxattr("file", "user.hrt", buf, sizeof buf));
    }
    symlink("file", "link");
    show("lsetxattr on a link (user.*)", lsetxattr("link", "user.hrt", "v", 1, 0));
    show("lremovexattr on a link", lremovexattr("link", "user.hrt"));
    show("setxattr, bad name", setxattr("file", "nonamespace", "v", 1, 0));
    show("setxattr, too large", syscall(SYS_setxattr, "file", "user.big", buf, 70000, 0));
    show("setxattr, bad value pointer", syscall(SYS_setxattr, "file", "user.hrt", (void *)8, 4, 0));
    show("setxattr, missing file", setxattr("missing", "user.hrt", "v", 1, 0));
    show("removexattr, missing file", removexattr("missing", "user.hrt"));

    // File handles (name_to_handle_at was ENOSYS): too small a buffer says the size; the same
    // file's handle by name, through a link followed and by descriptor is the same.
    struct file_handle *h = malloc(sizeof *h + 128), *g = malloc(sizeof *g + 128);
    int mnt = -1, mnt2 = -2;
    h->handle_bytes = 0;
    show("name_to_handle_at, no room", syscall(SYS_name_to_handle_at, AT_FDCWD, "file", h, &mnt, 0));
    printf("  size given: %s\n", h->handle_bytes > 0 && h->handle_bytes <= 128 ? "yes" : "no");
    h->handle_bytes = 128;
    show("name_to_handle_at", syscall(SYS_name_to_handle_at, AT_FDCWD, "file", h, &mnt, 0));
    g->handle_bytes = 128;
    show("name_to_handle_at, link followed",
         syscall(SYS_name_to_handle_at, AT_FDCWD, "link", g, &mnt2, AT_SYMLINK_FOLLOW));
    printf("  same handle and mount: %d\n",
           h->handle_bytes == g->handle_bytes && !memcmp(h->f_handle, g->f_handle, h->handle_bytes) && mnt == mnt2);
    int hf = open("file", O_RDONLY);
    g->handle_bytes = 128;
    show("name_to_handle_at, AT_EMPTY_PATH", syscall(SYS_name_to_handle_at, hf, "", g, &mnt2, AT_EMPTY_PATH));
    printf("  same handle: %d\n", !memcmp(h->f_handle, g->f_handle, h->handle_bytes));
    close(hf);
    // A handle that can be reconnected to its path (AT_HANDLE_CONNECTABLE, Linux 6.13; it was
    // EINVAL under hrt whatever the host said).
    g->handle_bytes = 128;
    show("name_to_handle_at, connectable", syscall(SYS_name_to_handle_at, AT_FDCWD, "file", g, &mnt2, 0x002));
    show("name_to_handle_at, missing", syscall(SYS_name_to_handle_at, AT_FDCWD, "missing", g, &mnt2, 0));
    show("name_to_handle_at, bad flags", syscall(SYS_name_to_handle_at, AT_FDCWD, "file", g, &mnt2, 0x4000));
    g->handle_bytes = 4096;
    show("name_to_handle_at, huge size", syscall(SYS_name_to_handle_at, AT_FDCWD, "file", g, &mnt2, 0));
    show("name_to_handle_at, bad handle", syscall(SYS_name_to_handle_at, AT_FDCWD, "file", (void *)8, &mnt2, 0));

    const char *all[] = {"file", "dir", "fifo", "fifo2", "reg", "file022", "link"};
    for (unsigned i = 0; i < sizeof all / sizeof all[0]; i++)
        i == 1 ? rmdir(all[i]) : unlink(all[i]);
    chdir("/");
    show("rmdir the directory", rmdir(dir));
    return 0;
}
