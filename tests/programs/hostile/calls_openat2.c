// openat2 with each RESOLVE_* restriction, bad `struct open_how`s, and paths into the
// program's own /proc (which must stay its own, not hrt's): the same answers as Linux.
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#define SHOW_WIDTH 44
#include "show.h"

static long o2(int dir, const char *path, uint64_t flags, uint64_t resolve) {
    struct open_how how = {.flags = flags, .resolve = resolve};
    return syscall(SYS_openat2, dir, path, &how, sizeof how);
}

int main(int argc, char **argv) {
    (void)argc;
    char top[] = "/tmp/hrt-openat2-XXXXXX";
    if (!mkdtemp(top) || chdir(top))
        return 1;
    mkdir("d", 0755);
    mkdir("d/sub", 0755);
    close(open("d/sub/f", O_CREAT | O_WRONLY, 0644));
    symlink("sub/f", "d/lnk");
    symlink("/etc/passwd", "d/abs");
    symlink("../..", "d/up");
    int d = open("d", O_DIRECTORY);
    show("plain", o2(d, "sub/f", O_RDONLY, 0) >= 0);
    show("NO_SYMLINKS, a link", o2(d, "lnk", O_RDONLY, RESOLVE_NO_SYMLINKS));
    show("NO_SYMLINKS, O_PATH|O_NOFOLLOW of a link", o2(d, "lnk", O_PATH | O_NOFOLLOW, RESOLVE_NO_SYMLINKS) >= 0);
    show("BENEATH, absolute link", o2(d, "abs", O_RDONLY, RESOLVE_BENEATH));
    show("IN_ROOT, absolute link", o2(d, "abs", O_RDONLY, RESOLVE_IN_ROOT));
    show("BENEATH, link up", o2(d, "up", O_RDONLY, RESOLVE_BENEATH));
    show("BENEATH, ../d/sub/f", o2(d, "../d/sub/f", O_RDONLY, RESOLVE_BENEATH));
    show("BENEATH, sub/../sub/f", o2(d, "sub/../sub/f", O_RDONLY, RESOLVE_BENEATH) >= 0);
    show("IN_ROOT, /sub/f", o2(d, "/sub/f", O_RDONLY, RESOLVE_IN_ROOT) >= 0);
    show("IN_ROOT, ../../sub/f", o2(d, "../../sub/f", O_RDONLY, RESOLVE_IN_ROOT) >= 0);
    show("IN_ROOT, relative link", o2(d, "lnk", O_RDONLY, RESOLVE_IN_ROOT) >= 0);
    show("NO_MAGICLINKS, /proc/self/exe", o2(AT_FDCWD, "/proc/self/exe", O_RDONLY, RESOLVE_NO_MAGICLINKS));
    show("NO_XDEV, /proc from /", o2(AT_FDCWD, "/proc", O_RDONLY, RESOLVE_NO_XDEV));
    show("BENEATH and IN_ROOT", o2(d, "sub/f", O_RDONLY, RESOLVE_BENEATH | RESOLVE_IN_ROOT));
    show("CACHED with O_CREAT", o2(d, "sub/g", O_CREAT | O_WRONLY, RESOLVE_CACHED));
    show("unknown resolve flag", o2(d, "sub/f", O_RDONLY, 0x1000));
    show("unknown open flag", o2(d, "sub/f", O_RDONLY | 0x4000000000ULL, 0));
    show("O_PATH with O_RDWR", o2(d, "sub/f", O_PATH | O_RDWR, 0));
    struct open_how how = {.flags = O_RDONLY, .mode = 0644};
    show("mode without O_CREAT", syscall(SYS_openat2, d, "sub/f", &how, sizeof how));
    how.mode = 0;
    show("size 8", syscall(SYS_openat2, d, "sub/f", &how, 8));
    char big[64] = {0};
    memcpy(big, &how, sizeof how);
    show("size 64, zero tail", syscall(SYS_openat2, d, "sub/f", big, 64) >= 0);
    big[40] = 1;
    show("size 64, non-zero tail", syscall(SYS_openat2, d, "sub/f", big, 64));
    show("size 8192", syscall(SYS_openat2, d, "sub/f", big, 8192));
    how = (struct open_how){.flags = O_CREAT | O_WRONLY, .mode = 0600, .resolve = RESOLVE_BENEATH};
    show("O_CREAT beneath", syscall(SYS_openat2, d, "made", &how, sizeof how) >= 0);
    struct stat st;
    stat("d/made", &st);
    printf("made with mode %o\n", st.st_mode & 0777);

    // The program's own /proc through a restricted open from /.
    int root = open("/", O_RDONLY | O_DIRECTORY);
    long fd = o2(root, "proc/self/cmdline", O_RDONLY, RESOLVE_BENEATH);
    char text[256] = {0};
    long n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
    printf("cmdline through BENEATH from / names this program: %d\n", n > 0 && strcmp(text, argv[0]) == 0);
    show("NO_SYMLINKS through /proc/self", o2(root, "proc/self/status", O_RDONLY, RESOLVE_NO_SYMLINKS));

    unlink("d/made");
    unlink("d/sub/f");
    unlink("d/lnk");
    unlink("d/abs");
    unlink("d/up");
    rmdir("d/sub");
    rmdir("d");
    rmdir(top);
    printf("openat2: done\n");
    return 0;
}
