// The older time-setting calls: utime (seconds), utimes and futimesat (microseconds), NULL for
// "now", on a file of the program's; the times stat then reports, and the errors of bad
// microseconds, bad pointers and missing files. Compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

static void show(const char *what, long r) {
    printf("%-40s %s\n", what, r == 0 ? "0" : strerror(errno));
}

static void times_of(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) {
        printf("  stat: %s\n", strerror(errno));
        return;
    }
    printf("  atime %lld.%09ld mtime %lld.%09ld\n", (long long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
           (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

int main(void) {
    char dir[] = "/tmp/hrt-utimes-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[64];
    snprintf(path, sizeof path, "%s/f", dir);
    close(open(path, O_CREAT | O_WRONLY, 0644));

    struct utimbuf ub = {1000000000, 1100000000};
    show("utime", syscall(SYS_utime, path, &ub));
    times_of(path);
    struct timeval tv[2] = {{1200000000, 123456}, {1300000000, 654321}};
    show("utimes", syscall(SYS_utimes, path, tv));
    times_of(path);
    int d = open(dir, O_RDONLY | O_DIRECTORY);
    struct timeval tv2[2] = {{1400000000, 1}, {1500000000, 999999}};
    show("futimesat relative to a directory", syscall(SYS_futimesat, d, "f", tv2));
    times_of(path);
    time_t before = time(NULL);
    show("utimes NULL (now)", syscall(SYS_utimes, path, NULL));
    struct stat st;
    stat(path, &st);
    printf("  now: %d\n", st.st_mtim.tv_sec >= before - 1 && st.st_mtim.tv_sec <= time(NULL) + 1);
    show("utime NULL (now)", syscall(SYS_utime, path, NULL));

    struct timeval bad[2] = {{1, 1000000}, {1, 0}};
    show("utimes microseconds out of range", syscall(SYS_utimes, path, bad));
    struct timeval neg[2] = {{1, -1}, {1, 0}};
    show("utimes negative microseconds", syscall(SYS_utimes, path, neg));
    show("utimes bad pointer", syscall(SYS_utimes, path, (void *)8));
    show("utime bad pointer", syscall(SYS_utime, path, (void *)8));
    show("utimes missing file", syscall(SYS_utimes, "/tmp/hrt-no-such-file-utimes", tv));
    show("futimesat bad descriptor", syscall(SYS_futimesat, 999, "f", tv));
    unlink(path);
    close(d);
    rmdir(dir);
    return 0;
}
