// Opens and path lookups that the forwarder now makes without a thread hand-off and without
// its component-by-component walk: what the program sees must not change. In a fresh
// directory under /tmp; compared with the native run.
//   - the status flags of what it opens (a regular file, a directory, /dev/null, with and
//     without O_NONBLOCK, O_APPEND, O_PATH): an open made with O_NONBLOCK to guard against
//     waiting must not leave it set;
//   - a FIFO opened for reading waits for a writer on a thread of its own while the main
//     thread stats and opens plain files (they must not wait behind it), then opens the
//     writing end: the byte goes through; a FIFO opened with O_NONBLOCK keeps it;
//   - lookups the quick path takes or leaves to the full walk: relative, absolute, through a
//     directory link, a last name that is a link (followed or not), a dangling link, a name
//     to be created, `.`/`..` endings, a file as a directory, a link into /proc/self;
//   - the stat family from a directory descriptor, following or not (the quick path stats a
//     last name without following and walks again if it finds a link), statx with and without
//     the type in its mask, and attribute reads through a link, followed or not.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#define SHOW_WIDTH 40
#include "show.h"

/* Access mode and the status flags F_GETFL shows (O_LARGEFILE aside), or the error. */
static void flags_of(const char *what, const char *path, int flags) {
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        show(what, -1);
        return;
    }
    int got = fcntl(fd, F_GETFL);
    printf("%-*s accmode %d nonblock %d append %d path %d\n", SHOW_WIDTH, what, got & O_ACCMODE,
           !!(got & O_NONBLOCK), !!(got & O_APPEND), !!(got & O_PATH));
    close(fd);
}

/* What stat or lstat says of `path`: its type, or the error. */
static void kind(const char *what, const char *path, int follow) {
    struct stat st;
    if ((follow ? stat(path, &st) : lstat(path, &st)) != 0) {
        show(what, -1);
        return;
    }
    printf("%-*s type %06o size %lld\n", SHOW_WIDTH, what, st.st_mode & S_IFMT,
           S_ISREG(st.st_mode) ? (long long)st.st_size : 0LL);
}

static char fifo_byte;
static long fifo_got = -2;

static void *fifo_reader(void *arg) {
    (void)arg;
    int fd = open("fifo", O_RDONLY);
    if (fd >= 0) {
        fifo_got = read(fd, &fifo_byte, 1);
        close(fd);
    }
    return NULL;
}

/* statx and fstatat of `name` from directory descriptor `dfd`: the type (and a regular
 * file's size), or the error. */
static void kind_at(int dfd, const char *name, int flags, unsigned mask) {
    char what[64];
    struct statx sx;
    snprintf(what, sizeof what, "statx %s%s mask %#x", name, flags ? " nofollow" : "", mask);
    if (statx(dfd, name, flags, mask, &sx) != 0)
        show(what, -1);
    else
        printf("%-*s type %06o size %lld\n", SHOW_WIDTH, what, sx.stx_mode & S_IFMT,
               S_ISREG(sx.stx_mode) ? (long long)sx.stx_size : 0LL);
    struct stat st;
    snprintf(what, sizeof what, "fstatat %s%s", name, flags ? " nofollow" : "");
    if (fstatat(dfd, name, &st, flags) != 0)
        show(what, -1);
    else
        printf("%-*s type %06o size %lld\n", SHOW_WIDTH, what, st.st_mode & S_IFMT,
               S_ISREG(st.st_mode) ? (long long)st.st_size : 0LL);
}

int main(void) {
    char dir[] = "/tmp/hrt-open-XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0)
        return 1;
    setvbuf(stdout, NULL, _IONBF, 0);
    int fd = open("file", O_CREAT | O_WRONLY, 0644);
    if (fd < 0 || write(fd, "hello\n", 6) != 6)
        return 1;
    close(fd);
    mkdir("d", 0755);
    close(open("d/inner", O_CREAT | O_WRONLY, 0644));
    symlink("d", "dlink");
    symlink("file", "flink");
    symlink("missing", "dangling");
    symlink("/proc/self/status", "proclink");
    mkfifo("fifo", 0644);

    flags_of("file O_RDONLY", "file", O_RDONLY);
    flags_of("file O_RDWR|O_APPEND", "file", O_RDWR | O_APPEND);
    flags_of("file O_RDONLY|O_NONBLOCK", "file", O_RDONLY | O_NONBLOCK);
    flags_of("dir O_RDONLY|O_DIRECTORY", "d", O_RDONLY | O_DIRECTORY);
    flags_of("dir O_PATH", "d", O_PATH);
    flags_of("dir link O_RDONLY|O_DIRECTORY", "dlink", O_RDONLY | O_DIRECTORY);
    flags_of("fifo O_RDONLY|O_DIRECTORY", "fifo", O_RDONLY | O_DIRECTORY);
    flags_of("/dev/null O_WRONLY", "/dev/null", O_WRONLY);
    flags_of("new file O_CREAT|O_EXCL", "new", O_CREAT | O_EXCL | O_WRONLY);
    flags_of("new file again O_CREAT|O_EXCL", "new", O_CREAT | O_EXCL | O_WRONLY);
    flags_of("missing O_RDONLY", "missing", O_RDONLY);
    flags_of("file as a directory", "file/x", O_RDONLY);
    flags_of("file O_DIRECTORY", "file", O_RDONLY | O_DIRECTORY);
    flags_of("flink O_NOFOLLOW", "flink", O_RDONLY | O_NOFOLLOW);
    flags_of("flink O_PATH|O_NOFOLLOW", "flink", O_PATH | O_NOFOLLOW);
    flags_of("fifo O_RDONLY|O_NONBLOCK", "fifo", O_RDONLY | O_NONBLOCK);
    flags_of("fifo O_WRONLY|O_NONBLOCK, no reader", "fifo", O_WRONLY | O_NONBLOCK);

    pthread_t t;
    pthread_create(&t, NULL, fifo_reader, NULL);
    usleep(50000); /* the reader most likely waits in its open by now (the output is the same either way) */
    int plain = 0;
    for (int i = 0; i < 200; i++) {
        struct stat st;
        int f = open("d/inner", O_RDONLY);
        plain += f >= 0 && stat("file", &st) == 0;
        close(f);
    }
    printf("%-*s %d of 200\n", SHOW_WIDTH, "plain opens while a FIFO open waits", plain);
    int w = open("fifo", O_WRONLY);
    show("fifo write", write(w, "x", 1));
    close(w);
    pthread_join(t, NULL);
    printf("%-*s %ld '%c'\n", SHOW_WIDTH, "fifo read", fifo_got, fifo_byte);

    char abs[64];
    snprintf(abs, sizeof abs, "%s/d/inner", dir);
    static const struct {
        const char *what, *path;
        int follow;
    } lookups[] = {
        {"stat file", "file", 1},
        {"stat dlink/inner", "dlink/inner", 1},
        {"stat flink", "flink", 1},
        {"lstat flink", "flink", 0},
        {"stat dangling", "dangling", 1},
        {"lstat dangling", "dangling", 0},
        {"stat d/.", "d/.", 1},
        {"stat d/..", "d/..", 1},
        {"stat d/", "d/", 1},
        {"stat file/", "file/", 1},
        {"stat d/../file", "d/../file", 1},
        {"stat ./d/./inner", "./d/./inner", 1},
        {"stat missing/x", "missing/x", 1},
        {"lstat proclink", "proclink", 0},
    };
    kind("stat absolute d/inner", abs, 1);
    for (size_t i = 0; i < sizeof lookups / sizeof lookups[0]; i++)
        kind(lookups[i].what, lookups[i].path, lookups[i].follow);
    int dfd = open(".", O_RDONLY | O_DIRECTORY);
    static const char *names[] = {"file", "flink", "dlink", "dangling", "proclink", "missing", "d/inner"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        kind_at(dfd, names[i], 0, STATX_TYPE | STATX_SIZE);
        kind_at(dfd, names[i], AT_SYMLINK_NOFOLLOW, STATX_TYPE | STATX_SIZE);
        kind_at(dfd, names[i], 0, STATX_SIZE);
    }
    close(dfd);
    char v[64];
    setxattr("file", "user.hrt", "v1", 2, 0);
    show("getxattr flink (the file's)", getxattr("flink", "user.hrt", v, sizeof v));
    show("lgetxattr flink (the link's)", lgetxattr("flink", "user.hrt", v, sizeof v));
    show("getxattr dangling", getxattr("dangling", "user.hrt", v, sizeof v));
    show("listxattr flink", listxattr("flink", v, sizeof v));
    show("llistxattr flink", llistxattr("flink", v, sizeof v));
    show("getxattr missing", getxattr("missing", "user.hrt", v, sizeof v));
    show("getxattr file/x", getxattr("file/x", "user.hrt", v, sizeof v));
    show("removexattr flink (the file's)", removexattr("flink", "user.hrt"));
    show("getxattr file after", getxattr("file", "user.hrt", v, sizeof v));
    struct stat st;
    show("stat proclink (a file)", stat("proclink", &st) == 0 && S_ISREG(st.st_mode));
    show("stat /etc/passwd", stat("/etc/passwd", &st) == 0 && S_ISREG(st.st_mode));
    show("access file R_OK", access("file", R_OK));
    show("access missing", access("missing", F_OK));
    show("mkdir d2", mkdir("d2", 0700));
    show("mkdir d2 again", mkdir("d2", 0700));
    show("rename d2 d3", rename("d2", "d3"));
    show("rmdir d3", rmdir("d3"));
    show("unlink new", unlink("new"));
    show("unlink dlink (the link)", unlink("dlink"));
    kind("stat d after unlinking dlink", "d", 1);

    unlink("fifo");
    unlink("flink");
    unlink("dangling");
    unlink("proclink");
    unlink("d/inner");
    rmdir("d");
    unlink("file");
    chdir("/");
    rmdir(dir);
    return 0;
}
