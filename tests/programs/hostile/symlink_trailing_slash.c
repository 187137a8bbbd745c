/* Symbolic links whose target ends in "/", and "." after a name (Go's os.Root tests): what a
 * link "f/" names must be a directory, so open, openat, stat, chmod and an O_CREAT open of a
 * link to a file fail with ENOTDIR, as does anything through "link/." or "file/."; a link
 * "d/" to a directory works; lstat and readlink see the link itself. hrt followed "f/" to the
 * file (and gave EISDIR for "l/." with O_CREAT). Each line: the call and its answer. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void show(const char *what, long r) {
    printf("%-34s %s\n", what, r >= 0 ? "ok" : strerror(errno));
}

static long opened(int fd) {
    if (fd >= 0)
        close(fd);
    return fd;
}

int main(void) {
    char dir[] = "/tmp/hrt-slash-XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0)
        return 1;
    close(open("f", O_CREAT | O_WRONLY, 0644));
    mkdir("d", 0755);
    symlink("f/", "lf");
    symlink("d/", "ld");
    symlink("f", "l");
    symlink("nosuch/", "ln");
    struct stat st;
    char buf[64];
    show("open lf (-> f/)", opened(open("lf", O_RDONLY)));
    show("openat lf", opened(openat(AT_FDCWD, "lf", O_RDONLY | O_CLOEXEC)));
    show("open lf O_CREAT", opened(open("lf", O_RDWR | O_CREAT, 0644)));
    show("stat lf", stat("lf", &st));
    show("chmod lf", chmod("lf", 0644));
    show("lstat lf", lstat("lf", &st));
    show("readlink lf", readlink("lf", buf, sizeof buf));
    show("open ld (-> d/)", opened(open("ld", O_RDONLY | O_DIRECTORY)));
    show("stat ld", stat("ld", &st));
    show("open l/.", opened(open("l/.", O_RDONLY)));
    show("open l/. O_CREAT", opened(open("l/.", O_RDWR | O_CREAT, 0644)));
    show("stat l/.", stat("l/.", &st));
    show("open f/.", opened(open("f/.", O_RDONLY)));
    show("stat f/", stat("f/", &st));
    show("open ln (-> nosuch/) O_CREAT", opened(open("ln", O_RDWR | O_CREAT, 0644)));
    show("stat ln", stat("ln", &st));
    show("access lf", access("lf", F_OK));
    unlink("lf"), unlink("ld"), unlink("l"), unlink("ln"), unlink("f"), unlink("nosuch"), rmdir("d");
    if (chdir("/") != 0 || rmdir(dir) != 0)
        return 2;
    printf("trailing slash: done\n");
    return 0;
}
