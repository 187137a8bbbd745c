// inotify (it was ENOSYS: `tail -f` fell back to polling, Node.js's fs.watch threw): watches on
// a directory and a file, the events of creating, writing, renaming and deleting (masks and
// names), poll on the descriptor, IN_DONT_FOLLOW on a symbolic link, IN_ONLYDIR on a file,
// removing a watch (IN_IGNORED), and the error cases. Compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

static int wd_dir, wd_file;

static void show(const char *what, long r) {
    if (r < 0)
        printf("%-34s -1 %s\n", what, strerror(errno));
    else
        printf("%-34s ok\n", what);
}

static void drain(int fd, const char *when) {
    char buf[4096] __attribute__((aligned(8)));
    printf("%s:\n", when);
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) {
            printf("  end: %s\n", n < 0 ? strerror(errno) : "0");
            return;
        }
        for (char *p = buf; p < buf + n;) {
            struct inotify_event *e = (struct inotify_event *)p;
            const char *who = e->wd == wd_dir ? "dir" : e->wd == wd_file ? "file" : "?";
            printf("  %-4s mask %08x cookie %s name '%s'\n", who, e->mask, e->cookie ? "set" : "0",
                   e->len ? e->name : "");
            p += sizeof *e + e->len;
        }
    }
}

int main(void) {
    char dir[] = "/tmp/hrt-inotify-XXXXXX";
    if (!mkdtemp(dir) || chdir(dir) != 0)
        return 1;
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    printf("init1 ok %d cloexec %d\n", fd >= 0, fcntl(fd, F_GETFD) == FD_CLOEXEC);
    close(open("watched", O_CREAT | O_WRONLY, 0644));
    wd_dir = inotify_add_watch(fd, ".", IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE);
    wd_file = inotify_add_watch(fd, "watched", IN_MODIFY | IN_ATTRIB);
    printf("watches %d %d distinct %d\n", wd_dir > 0, wd_file > 0, wd_dir != wd_file);
    drain(fd, "nothing yet");
    struct pollfd p = {fd, POLLIN, 0};
    printf("poll before: %d\n", poll(&p, 1, 0));
    int f = open("new", O_CREAT | O_WRONLY, 0644);
    write(f, "x", 1);
    close(f);
    int w = open("watched", O_WRONLY | O_APPEND);
    write(w, "y", 1);
    close(w);
    chmod("watched", 0600);
    rename("new", "renamed");
    unlink("renamed");
    printf("poll after: %d\n", poll(&p, 1, 1000));
    drain(fd, "after the changes");
    symlink("watched", "link");
    show("IN_DONT_FOLLOW on a link", inotify_add_watch(fd, "link", IN_ATTRIB | IN_DONT_FOLLOW));
    show("IN_ONLYDIR on a file", inotify_add_watch(fd, "watched", IN_ATTRIB | IN_ONLYDIR));
    show("missing path", inotify_add_watch(fd, "missing", IN_ATTRIB));
    show("empty mask", inotify_add_watch(fd, ".", 0));
    show("not an inotify descriptor", inotify_add_watch(1, ".", IN_ATTRIB));
    show("bad descriptor", inotify_add_watch(99, ".", IN_ATTRIB));
    show("bad path pointer", inotify_add_watch(fd, (char *)8, IN_ATTRIB));
    show("bad flags", inotify_init1(0x1234));
    show("rm_watch file", inotify_rm_watch(fd, wd_file));
    show("rm_watch again", inotify_rm_watch(fd, wd_file));
    drain(fd, "after removing the watch");
    unlink("link");
    unlink("watched");
    drain(fd, "after deleting");
    close(fd);
    chdir("/");
    rmdir(dir);
    return 0;
}
