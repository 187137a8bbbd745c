/* Calls that act on a directory entry (unlink, rmdir, rename, mkdir, mknod, symlink and link's
 * new names) look up only the path's directory part, as Linux does: a trailing slash does not
 * follow a symbolic link at the last name (`rmdir link/` is ENOTDIR and never removes the
 * link's target), and a final "." or ".." stays the last name (`rmdir d/.` is EINVAL, `rename
 * d/. x` EBUSY, `mkdir new/.` ENOENT). open with O_CREAT|O_EXCL never follows a link at the last
 * name, even a dangling one (EEXIST), while a plain O_CREAT creates the link's target. Each case
 * prints its result and the tree after it; the same natively and under hrt.
 * Usage: path_entries */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Appends the entries below `dir` (sorted, depth first, "/" after directories, "@" after
 * links) to `out`. */
static void tree(const char *dir, char *out, size_t cap) {
    struct dirent **list;
    int n = scandir(dir, &list, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        if (strcmp(name, ".") && strcmp(name, "..")) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s", dir, name);
            struct stat st;
            lstat(path, &st);
            const char *mark = S_ISDIR(st.st_mode) ? "/" : S_ISLNK(st.st_mode) ? "@" : "";
            size_t len = strlen(out);
            snprintf(out + len, cap - len, " %s%s", path + 2, mark);
            if (S_ISDIR(st.st_mode))
                tree(path, out, cap);
        }
        free(list[i]);
    }
    free(list);
}

static void report(const char *what, long r) {
    char out[4096] = "";
    tree(".", out, sizeof out);
    printf("%-34s %-9s%s\n", what, r < 0 ? strerrorname_np(errno) : "ok", out);
}

#define CASE(what, call)        \
    do {                        \
        errno = 0;              \
        long r_ = (call);       \
        if (r_ >= 0 && r_ > 2)  \
            close((int)r_);     \
        report(what, r_);       \
    } while (0)

int main(void) {
    char top[] = "/tmp/hrt-entries-XXXXXX";
    if (!mkdtemp(top) || chdir(top) != 0)
        return 1;
    mkdir("t", 0755);
    mkdir("t/in", 0755);
    symlink("t", "L");
    symlink("nowhere", "D");
    close(open("f", O_CREAT | O_WRONLY, 0644));
    symlink("f", "LF");
    report("start", 0);
    /* A trailing slash at a link to a directory, to a file, and a dangling one. */
    CASE("rmdir L/", rmdir("L/"));
    CASE("unlinkat L/ AT_REMOVEDIR", unlinkat(AT_FDCWD, "L/", AT_REMOVEDIR));
    CASE("unlink L/", unlink("L/"));
    CASE("unlink LF/", unlink("LF/"));
    CASE("rename L/ M", rename("L/", "M"));
    CASE("rename LF/ x", rename("LF/", "x"));
    CASE("rename f D/", rename("f", "D/"));
    CASE("rename t D/", rename("t", "D/"));
    CASE("mkdir D/", mkdir("D/", 0755));
    CASE("mknod D/ fifo", mknod("D/", S_IFIFO | 0600, 0));
    CASE("link f D/", link("f", "D/"));
    CASE("symlink x new/", symlink("x", "new/"));
    CASE("rmdir t/", rmdir("t/"));
    CASE("rename t/in/ t/out/", rename("t/in/", "t/out/"));
    /* A final "." or "..". */
    CASE("rmdir t/out/.", rmdir("t/out/."));
    CASE("rmdir t/out/..", rmdir("t/out/.."));
    CASE("unlink t/.", unlink("t/."));
    CASE("rename t/out/. x", rename("t/out/.", "x"));
    CASE("rename t/out t/.", rename("t/out", "t/."));
    CASE("mkdir t/.", mkdir("t/.", 0755));
    CASE("mkdir new/.", mkdir("new/.", 0755));
    CASE("link f t/.", link("f", "t/."));
    CASE("symlink x t/..", symlink("x", "t/.."));
    CASE("mknod t/. fifo", mknod("t/.", S_IFIFO | 0600, 0));
    CASE("open t/. O_CREAT", open("t/.", O_CREAT | O_WRONLY, 0644));
    CASE("rmdir L/.", rmdir("L/."));
    /* The root itself. */
    CASE("rmdir /", rmdir("/"));
    CASE("rmdir //", rmdir("//"));
    CASE("rmdir /.", rmdir("/."));
    CASE("unlink /", unlink("/"));
    CASE("unlinkat / AT_REMOVEDIR", unlinkat(AT_FDCWD, "/", AT_REMOVEDIR));
    CASE("rename / x", rename("/", "x"));
    /* O_CREAT through links. */
    CASE("open D O_CREAT|O_EXCL", open("D", O_CREAT | O_EXCL | O_WRONLY, 0644));
    CASE("open LF O_CREAT|O_EXCL", open("LF", O_CREAT | O_EXCL | O_WRONLY, 0644));
    CASE("open D O_CREAT", open("D", O_CREAT | O_WRONLY, 0644));
    CASE("open D/ O_CREAT", open("D/", O_CREAT | O_WRONLY, 0644));
    /* What stays: lstat and stat of a link with a slash follow it. */
    struct stat st;
    errno = 0;
    int r = lstat("L/", &st);
    printf("lstat L/: %s %s\n", r < 0 ? strerrorname_np(errno) : "ok", r == 0 && S_ISDIR(st.st_mode) ? "dir" : "-");
    chdir("/");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", top);
    return system(cmd) == 0 ? 0 : 2;
}
