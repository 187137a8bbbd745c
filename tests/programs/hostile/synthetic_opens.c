/* Files the monitor makes up for the VM (the CPU lists under /sys, /proc/cpuinfo, /proc/self/stat)
 * must behave as one open file each: two opens of the same file keep offsets of their own, an
 * open after many other such files reads the same bytes, a write is EBADF, and lseek to 0 reads
 * it again, also in a forked child (whose monitor closed the descriptors it did not know, the
 * kept memory files among them). The monitor keeps the memory files of recent contents and
 * opens them again; this checks that such reuse is invisible. Prints properties, not contents (natively the contents
 * are the host's). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *ONLINE = "/sys/devices/system/cpu/online";

static ssize_t slurp(int fd, char *buf, size_t cap) {
    size_t got = 0;
    for (;;) {
        ssize_t n = read(fd, buf + got, cap - got);
        if (n <= 0)
            return n < 0 ? -1 : (ssize_t)got;
        got += n;
    }
}

static ssize_t whole(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = slurp(fd, buf, cap);
    close(fd);
    return n;
}

int main(void) {
    static char first[4096], again[4096], part[4096], rest[4096], other[1 << 16];
    ssize_t len = whole(ONLINE, first, sizeof first);
    printf("online read: %s\n", len > 0 ? "yes" : "no");

    /* Two opens at once: one byte from the first, all of the second, the rest of the first. */
    int a = open(ONLINE, O_RDONLY), b = open(ONLINE, O_RDONLY);
    ssize_t one = read(a, part, 1);
    ssize_t all = slurp(b, again, sizeof again);
    ssize_t tail = slurp(a, rest, sizeof rest);
    printf("second open reads all: %s\n", all == len && memcmp(again, first, len) == 0 ? "yes" : "no");
    printf("first open goes on after its byte: %s\n",
           one == 1 && tail == len - 1 && part[0] == first[0] && memcmp(rest, first + 1, len - 1) == 0 ? "yes" : "no");
    errno = 0;
    ssize_t w = write(a, "x", 1);
    printf("write: %zd %s\n", w, errno == EBADF ? "EBADF" : strerror(errno));
    printf("lseek to 0 reads it again: %s\n",
           lseek(a, 0, SEEK_SET) == 0 && slurp(a, again, sizeof again) == len && memcmp(again, first, len) == 0 ? "yes" : "no");
    close(a);
    close(b);

    /* Many other made-up files in between (each /proc/self/stat differs), then the same bytes. */
    int others = 0;
    for (int i = 0; i < 40; i++) {
        const char *p = i % 3 == 0 ? "/proc/self/stat" : i % 3 == 1 ? "/proc/cpuinfo" : "/sys/devices/system/cpu/possible";
        others += whole(p, other, sizeof other) > 0;
    }
    printf("others read: %d of 40\n", others);
    len = whole(ONLINE, again, sizeof again);
    printf("online again the same: %s\n", len > 0 && memcmp(again, first, len) == 0 ? "yes" : "no");
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        char mine[4096];
        ssize_t n = whole(ONLINE, mine, sizeof mine);
        int fine = 0;
        for (int i = 0; i < 20; i++)
            fine += whole(i % 2 ? "/proc/cpuinfo" : "/proc/self/stat", other, sizeof other) > 0;
        ssize_t m = whole(ONLINE, again, sizeof again);
        printf("child: online the same: %s, again: %s, others %d of 20\n",
               n == len && memcmp(mine, first, len) == 0 ? "yes" : "no",
               m == len && memcmp(again, first, len) == 0 ? "yes" : "no", fine);
        fflush(stdout);
        _exit(0);
    }
    int status = -1;
    waitpid(child, &status, 0);
    printf("child ended: %d\n", status);
    puts("synthetic opens done");
    return 0;
}
