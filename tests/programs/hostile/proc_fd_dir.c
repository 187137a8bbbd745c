/* The program's descriptor directories list its own descriptors, as on Linux: /proc/self/fd,
 * /dev/fd and /proc/self/fdinfo read with readdir and with getdents64 in small pieces, after
 * a rewind, through a name relative to the directory, after fchdir into it, and in a forked
 * child after it closed one, and read in pieces by a program that closes each descriptor it
 * reads (every one must go); `..` after a descriptor link goes through the descriptor. (Under hrt the monitor's own directory lists hrt's descriptors,
 * KVM's among them; listing it was EACCES before.)
 * Usage: proc_fd_dir */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int by_number(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* The numbers readdir gives for `path` (".", ".." and the types checked), sorted. */
static void list(const char *what, const char *path) {
    DIR *d = opendir(path);
    if (!d) {
        printf("%s: opendir failed\n", what);
        return;
    }
    int n[64], count = 0, dots = 0, odd = 0;
    struct dirent *e;
    while ((e = readdir(d)) && count < 64) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) {
            dots += e->d_type == DT_DIR;
            continue;
        }
        odd += e->d_type != (strstr(path, "fdinfo") ? DT_REG : DT_LNK);
        n[count++] = atoi(e->d_name);
    }
    qsort(n, count, sizeof *n, by_number);
    printf("%s:", what);
    for (int i = 0; i < count; i++)
        printf(" %d", n[i] == dirfd(d) ? -1 : n[i]);
    printf(" (dots %d, other types %d)\n", dots, odd);
    closedir(d);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    syscall(SYS_close_range, 3, ~0U, 0);
    int a = open("/dev/null", O_RDONLY);
    int p[2];
    pipe(p);
    dup2(a, 12);
    printf("opened %d, pipe %d %d, dup at 12 (the listing's own descriptor shows as -1)\n", a, p[0], p[1]);
    list("/proc/self/fd", "/proc/self/fd");
    list("/dev/fd", "/dev/fd");
    list("/proc/self/fdinfo", "/proc/self/fdinfo");
    list("/proc/self/fd/", "/proc/self/fd/");

    /* getdents64 with room for two records at a time, then a rewind. */
    int d = open("/proc/self/fd", O_RDONLY | O_DIRECTORY);
    char buf[64];
    int calls = 0, names = 0;
    long got;
    while ((got = syscall(SYS_getdents64, d, buf, sizeof buf)) > 0) {
        calls++;
        for (long off = 0; off < got;) {
            unsigned short reclen = *(unsigned short *)(buf + off + 16);
            names++;
            off += reclen;
        }
    }
    printf("getdents64 in 64-byte pieces: %d names, %s\n", names, calls > 1 ? "more than one call" : "one call");
    lseek(d, 0, SEEK_SET);
    got = syscall(SYS_getdents64, d, buf, sizeof buf);
    printf("after a rewind: %s\n", got > 0 ? "entries again" : "nothing");
    struct stat st;
    fstat(d, &st);
    printf("fstat: %s\n", S_ISDIR(st.st_mode) ? "a directory" : "not a directory");
    char target[64] = "";
    readlinkat(d, "12", target, sizeof target - 1);
    printf("readlinkat(dir, \"12\"): %s\n", target);
    if (fchdir(d) == 0) {
        memset(target, 0, sizeof target);
        readlink("12", target, sizeof target - 1);
        printf("after fchdir, readlink(\"12\"): %s\n", target);
        chdir("/");
    }
    close(d);

    /* After a descriptor link, `.`, `..` and `/` go through the descriptor: a file's is
     * ENOTDIR (not the fd directory, read lexically); a directory's `..` is its parent. */
    int file = open("/etc/passwd", O_RDONLY), dir = open("/etc", O_RDONLY | O_DIRECTORY);
    const char *after[] = {"/..", "/.", "/", "/../passwd"};
    for (int i = 0; i < 4; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/self/fd/%d%s", file, after[i]);
        int r = stat(path, &st);
        printf("stat(file fd%s): %s\n", after[i], r == 0 ? "found" : strerror(errno));
        snprintf(path, sizeof path, "/dev/fd/%d%s", file, after[i]);
        r = open(path, O_RDONLY);
        printf("open(/dev/fd/file%s): %s\n", after[i], r >= 0 ? "opened" : strerror(errno));
        if (r >= 0)
            close(r);
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d/../etc/passwd", dir);
    printf("dir fd/../etc/passwd: %s\n", stat(path, &st) == 0 && S_ISREG(st.st_mode) ? "a file" : strerror(errno));
    snprintf(path, sizeof path, "/dev/fd/%d/.", dir);
    printf("dir fd/.: %s\n", stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? "a directory" : strerror(errno));
    close(file);
    close(dir);

    pid_t c = fork();
    if (c == 0) {
        close(12);
        list("forked child after close(12)", "/proc/self/fd");
        _exit(0);
    }
    waitpid(c, NULL, 0);
    list("parent after the child", "/proc/self/fd");

    /* Closing what it reads, in small pieces (CPython's subprocess child without close_range):
     * the listing goes on after the last number returned, so every descriptor is closed. */
    for (int i = 0; i < 12; i++)
        open("/dev/null", O_RDONLY);
    d = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char small[96];
    while ((got = syscall(SYS_getdents64, d, small, sizeof small)) > 0) {
        for (long off = 0; off < got;) {
            const char *name = small + off + 19;
            off += *(unsigned short *)(small + off + 16);
            int fd = atoi(name);
            if (name[0] >= '0' && name[0] <= '9' && fd > 2 && fd != d)
                close(fd);
        }
    }
    close(d);
    printf("left open after closing while reading:");
    for (int fd = 3; fd < 64; fd++)
        if (fcntl(fd, F_GETFD) != -1)
            printf(" %d", fd);
    printf("\n");
    return 0;
}
