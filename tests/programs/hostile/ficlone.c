/* FICLONE and FICLONERANGE (ioctl_ficlone(2), `cp --reflink`): the source is a descriptor
 * number of the program's. Answers as natively: EBADF for a destination not open for writing
 * or a source that is not open, EISDIR for directories, and whatever the file system says for
 * a real clone (a copy where it can, EOPNOTSUPP, EXDEV or EINVAL where it cannot), with the
 * copy's bytes checked where it was made. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

static void show(const char *what, int r) {
    if (r < 0)
        printf("%-36s -1 %s\n", what, strerror(errno));
    else
        printf("%-36s %d\n", what, r);
}

int main(void) {
    char dir[] = "/tmp/hrt-ficlone-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char src_path[64], dst_path[64];
    snprintf(src_path, sizeof src_path, "%s/src", dir);
    snprintf(dst_path, sizeof dst_path, "%s/dst", dir);
    int src = open(src_path, O_RDWR | O_CREAT, 0600);
    static char block[8192];
    for (size_t i = 0; i < sizeof block; i++)
        block[i] = (char)(i * 7);
    if (write(src, block, sizeof block) != sizeof block) {
        perror("write");
        return 1;
    }
    int ro = open(src_path, O_RDONLY);
    int dst = open(dst_path, O_RDWR | O_CREAT, 0600);
    int d = open(dir, O_RDONLY | O_DIRECTORY);

    show("FICLONE into a read-only descriptor", ioctl(ro, FICLONE, ro));
    show("FICLONE of directories", ioctl(d, FICLONE, d));
    show("FICLONE from descriptor -1", ioctl(dst, FICLONE, -1));
    show("FICLONE from descriptor 12345", ioctl(dst, FICLONE, 12345));
    int r = ioctl(dst, FICLONE, src);
    show("FICLONE of a file", r);
    if (r == 0) {
        static char back[8192];
        printf("clone reads back the same bytes: %s\n",
               pread(dst, back, sizeof back, 0) == sizeof back && memcmp(back, block, sizeof back) == 0 ? "yes"
                                                                                                        : "no");
    }
    struct file_clone_range range = {.src_fd = src, .src_offset = 0, .src_length = 4096, .dest_offset = 4096};
    show("FICLONERANGE of a page", ioctl(dst, FICLONERANGE, &range));
    range.src_fd = 12345;
    show("FICLONERANGE from descriptor 12345", ioctl(dst, FICLONERANGE, &range));
    show("FICLONERANGE with a bad pointer", ioctl(dst, FICLONERANGE, (void *)8));

    unlink(src_path);
    unlink(dst_path);
    rmdir(dir);
    printf("ficlone: done\n");
    return 0;
}
