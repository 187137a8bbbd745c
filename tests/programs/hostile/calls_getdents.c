// getdents, the old directory record (struct linux_dirent: the type in the record's last
// byte), which old C libraries' readdir reads; it was ENOSYS. Lists a directory made here with
// a file, a directory, a symlink and a FIFO through getdents and through getdents64 (names and
// types, sorted), reads it in small pieces, and the error cases (a buffer too small for one
// record, not a directory, a bad descriptor, a bad buffer). Compared with the native run.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

struct old_dirent {
    unsigned long ino, off;
    unsigned short reclen;
    char name[];
};

struct new_dirent {
    unsigned long ino;
    long off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

#define SHOW_WIDTH 32
#include "show.h"

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

// Lists `dir` with getdents (old) or getdents64 in reads of `count` bytes: "name:type" sorted.
static void list(const char *what, const char *dir, int old, size_t count) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    char buf[4096], *names[64];
    int n = 0, reads = 0;
    for (;;) {
        long got = syscall(old ? SYS_getdents : SYS_getdents64, fd, buf, count);
        if (got <= 0) {
            if (got < 0)
                printf("%s: error %s\n", what, strerror(errno));
            break;
        }
        reads++;
        for (long at = 0; at < got;) {
            const char *name;
            unsigned char type;
            unsigned short reclen;
            if (old) {
                struct old_dirent *d = (struct old_dirent *)(buf + at);
                name = d->name, reclen = d->reclen, type = buf[at + reclen - 1];
            } else {
                struct new_dirent *d = (struct new_dirent *)(buf + at);
                name = d->name, reclen = d->reclen, type = d->type;
            }
            if (n < 64 && asprintf(&names[n], "%s:%d", name, type) > 0)
                n++;
            at += reclen;
        }
    }
    qsort(names, n, sizeof names[0], cmp);
    printf("%s (%s reads):", what, reads > 1 ? "several" : "one");
    for (int i = 0; i < n; i++)
        printf(" %s", names[i]);
    printf("\n");
    close(fd);
}

int main(void) {
    char dir[] = "/tmp/hrt-getdents-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char p[256];
    snprintf(p, sizeof p, "%s/file", dir);
    close(open(p, O_CREAT | O_WRONLY, 0600));
    snprintf(p, sizeof p, "%s/subdir", dir);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/link", dir);
    symlink("file", p);
    snprintf(p, sizeof p, "%s/fifo", dir);
    mkfifo(p, 0600);
    snprintf(p, sizeof p, "%s/a-rather-long-name-for-a-directory-entry-0123456789", dir);
    close(open(p, O_CREAT | O_WRONLY, 0600));
    list("getdents", dir, 1, 4096);
    list("getdents64", dir, 0, 4096);
    list("getdents in 48-byte reads", dir, 1, 48);
    list("getdents64 in 48-byte reads", dir, 0, 48);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    char buf[4096];
    show("getdents(10-byte buffer)", syscall(SYS_getdents, fd, buf, 10));
    show("getdents(bad buffer)", syscall(SYS_getdents, fd, (void *)8, sizeof buf));
    int file = open("/etc/hostname", O_RDONLY);
    show("getdents(a file)", syscall(SYS_getdents, file, buf, sizeof buf));
    show("getdents(bad descriptor)", syscall(SYS_getdents, 999, buf, sizeof buf));
    lseek(fd, 0, SEEK_SET);
    long got = syscall(SYS_getdents, fd, buf, sizeof buf);
    show("getdents again from the start", got > 0 ? 1 : got);
    DIR *d = opendir(dir);
    int count = 0;
    while (readdir(d))
        count++;
    printf("readdir: %d entries\n", count);
    closedir(d);
    const char *names[] = {"file", "subdir", "link", "fifo", "a-rather-long-name-for-a-directory-entry-0123456789"};
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        if (i == 1)
            rmdir(p);
        else
            unlink(p);
    }
    rmdir(dir);
    printf("getdents: done\n");
    return 0;
}
