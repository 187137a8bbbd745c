// Links in the program's own tree whose bodies lead into /proc or /dev (x -> /proc/self/fd/3,
// /dev/fd/3, /proc/self/cwd): Linux follows them to the program's entries; hrt's walk met the
// monitor's own /proc/self and said EACCES for every use (open, stat, mkdir below them...).
// Then calls on a directory entry whose last name is one of the program's /proc entries
// (mkdir /proc/self/fd/N, rename f /proc/self/fd/9, unlink /proc/self/cwd): procfs refuses
// them with its own errors (EEXIST, EXDEV, EPERM, ENOTDIR); hrt said ENOTDIR, EBUSY,
// ENOENT or EACCES, having looked at the object behind the link. And the two-path calls'
// order: link's unknown flags before either path, its old name looked up whole before the
// new one's walk, an empty name before the other path. Works in a fresh directory under /tmp.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "scratch.h"

static void said(const char *what, const char *a, long r) {
    printf("%-12s %-22s %ld %s\n", what, a, r, r < 0 ? strerror(errno) : "");
}

int main(void) {
    char dir[] = "/tmp/hrt-proc-links-XXXXXX";
    if (enter_scratch(dir))
        return 1;
    mkdir("d", 0755);
    int f = open("d/f", O_CREAT | O_RDWR, 0644);
    if (f < 0 || write(f, "12345", 5) != 5)
        return 1;
    int d = open("d", O_RDONLY | O_DIRECTORY);
    char body[64];
    snprintf(body, sizeof body, "/proc/self/fd/%d", d);
    symlink(body, "pd");
    snprintf(body, sizeof body, "/dev/fd/%d", f);
    symlink(body, "pf");
    symlink("/proc/self/cwd", "pc");
    struct stat st;
    const char *reads[] = {"pf", "pd", "pd/f", "pd/nothing", "pc/d/f", "pc"};
    for (unsigned i = 0; i < sizeof reads / sizeof *reads; i++) {
        long r = stat(reads[i], &st);
        said("stat", reads[i], r == 0 ? (long)st.st_size * !S_ISDIR(st.st_mode) + 1000 * !!S_ISDIR(st.st_mode) : r);
        int o = open(reads[i], O_RDONLY);
        said("open", reads[i], o < 0 ? o : 0);
        if (o >= 0)
            close(o);
    }
    said("mkdir", "pd/new", mkdir("pd/new", 0755));
    said("creat", "pd/g", creat("pd/g", 0644) >= 0 ? 0 : -1);
    said("rename", "pd/g pd/h", rename("pd/g", "pd/h"));
    said("symlink", "pd/s", symlink("f", "pd/s"));
    printf("d/new %s, d/h %s, d/s %s\n", exists("d/new"), exists("d/h"), exists("d/s"));
    // Calls on the /proc entries themselves.
    char own[64], slash[64], missing[] = "/proc/self/fd/999";
    snprintf(own, sizeof own, "/proc/self/fd/%d", f);
    snprintf(slash, sizeof slash, "/proc/self/fd/%d/", d);
    const char *entries[] = {own, slash, missing, "/proc/self/cwd", "/proc/self/fd/", "/proc/self/exe"};
    const char *names[] = {"fd/F", "fd/D/", "fd/999", "cwd", "fd/", "exe"};
    for (unsigned i = 0; i < sizeof entries / sizeof *entries; i++) {
        said("mkdir", names[i], mkdir(entries[i], 0755));
        said("unlink", names[i], unlink(entries[i]));
        said("rmdir", names[i], rmdir(entries[i]));
        said("rename to", names[i], rename("d/f", entries[i]));
        said("rename from", names[i], rename(entries[i], "d/x"));
        said("symlink at", names[i], symlink("f", entries[i]));
        said("mknod at", names[i], mknod(entries[i], S_IFIFO | 0644, 0));
    }
    said("excl creat", "/proc/self/comm", open("/proc/self/comm", O_CREAT | O_EXCL | O_WRONLY, 0644));
    // Two-path calls: which check comes first.
    close(open("file", O_CREAT | O_WRONLY, 0644));
    symlink("loop", "loop");
    said("link", "missing file/x", link("missing", "file/x"));
    said("link", "missing loop/x", link("missing", "loop/x"));
    said("link", "file/ nothing/x", link("file/", "nothing/x"));
    said("linkat 0x10", "file file/x", syscall(SYS_linkat, AT_FDCWD, "file", AT_FDCWD, "file/x", 0x10000));
    said("rename", "\"\" file/x", rename("", "file/x"));
    said("symlink", "\"\" file/x", symlink("", "file/x"));
    printf("file/x %s, d/x %s, d/f %s\n", exists("file/x"), exists("d/x"), exists("d/f"));
    close(f);
    close(d);
    const char *gone[] = {"pd", "pf", "pc", "loop", "file", "d/f", "d/h", "d/s", "d/x"};
    for (unsigned i = 0; i < sizeof gone / sizeof *gone; i++)
        unlink(gone[i]);
    rmdir("d/new");
    rmdir("d");
    if (chdir("/") || rmdir(dir))
        printf("left behind: %s\n", strerror(errno));
    printf("proc links in tree: done\n");
    return 0;
}
