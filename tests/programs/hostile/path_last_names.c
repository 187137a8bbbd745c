// Last names that Linux never creates (hrt did): a creat through a link whose body ends in
// "/." to a missing directory (ENOENT; hrt made a regular file there), an open O_CREAT of
// "missing/." (ENOENT; hrt said EISDIR), and a mkdir or link whose new name, reached through
// /proc/self/fd/N/, is a dangling link with a trailing slash (hrt followed the link and made
// its target); and O_CREAT of "name/", which Linux answers EISDIR right after the directory
// part's walk, without looking at the name (hrt followed a link loop there: ELOOP). Works in a
// fresh directory under /tmp and removes it.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scratch.h"

static void said(const char *what, long r) {
    printf("%-34s %ld %s\n", what, r, r < 0 ? strerror(errno) : "");
}

int main(void) {
    char dir[] = "/tmp/hrt-path-last-XXXXXX";
    if (enter_scratch(dir))
        return 1;
    mkdir("a", 0755);
    close(open("f", O_CREAT | O_WRONLY, 0644));
    symlink("a/x/.", "g");
    said("creat through a link to a/x/.", creat("g", 0644));
    printf("a/x %s\n", exists("a/x"));
    said("open O_CREAT a/z/.", open("a/z/.", O_CREAT | O_RDONLY, 0644));
    said("open O_CREAT missing/.", open("missing/.", O_CREAT | O_RDONLY, 0644));
    said("open O_CREAT a/.", open("a/.", O_CREAT | O_RDONLY, 0644));
    printf("a/z %s\n", exists("a/z"));
    symlink("nothing-here", "m");
    int d = open(".", O_RDONLY | O_DIRECTORY);
    char p[64];
    snprintf(p, sizeof p, "/proc/self/fd/%d/m/", d);
    said("mkdir /proc/self/fd/N/m/", mkdir(p, 0755));
    printf("nothing-here %s\n", exists("nothing-here"));
    snprintf(p, sizeof p, "/proc/self/fd/%d/./m/", d);
    said("mkdir /proc/self/fd/N/./m/", mkdir(p, 0755));
    printf("nothing-here %s\n", exists("nothing-here"));
    snprintf(p, sizeof p, "/dev/fd/%d/m/", d);
    said("link f to /dev/fd/N/m/", link("f", p));
    printf("nothing-here %s\n", exists("nothing-here"));
    symlink("l2", "l1");
    symlink("l1", "l2");
    said("creat l1/ (a link loop)", creat("l1/", 0644));
    said("open O_CREAT|O_EXCL l1/", open("l1/", O_CREAT | O_EXCL | O_RDONLY, 0644));
    said("open O_CREAT f/ (a file)", open("f/", O_CREAT | O_RDONLY, 0644));
    said("open O_CREAT m/ (dangling)", open("m/", O_CREAT | O_RDONLY, 0644));
    said("open O_CREAT missing/x/", open("missing/x/", O_CREAT | O_RDONLY, 0644));
    said("open O_CREAT f/x/ (through a file)", open("f/x/", O_CREAT | O_RDONLY, 0644));
    printf("nothing-here %s\n", exists("nothing-here"));
    unlink("l1");
    unlink("l2");
    rmdir("nothing-here");
    unlink("nothing-here");
    unlink("m");
    unlink("g");
    unlink("f");
    rmdir("a/x");
    unlink("a/x");
    rmdir("a/z");
    unlink("a/z");
    rmdir("a");
    if (chdir("/") || rmdir(dir))
        printf("left behind: %s\n", strerror(errno));
    printf("path last names: done\n");
    return 0;
}
