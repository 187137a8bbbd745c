/* Hints about a file's pages, as on Linux: readahead and sync_file_range on a file, on a pipe
 * and on a bad descriptor, with bad flags and ranges (they were ENOSYS under hrt), and the
 * file's bytes unchanged by them.
 * Usage: calls_file_hints */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void say(const char *what, long r) { printf("%-36s %ld %s\n", what, r, r < 0 ? strerrorname_np(errno) : ""); }

int main(void) {
    char path[] = "/tmp/hrt-hints-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    unlink(path);
    static char buf[1 << 16];
    memset(buf, 'h', sizeof buf);
    write(fd, buf, sizeof buf);
    int p[2];
    pipe(p);
    errno = 0;
    say("readahead(file, 0, 64 KiB)", readahead(fd, 0, sizeof buf));
    say("readahead(pipe)", readahead(p[0], 0, 4096));
    say("readahead(bad fd)", readahead(99, 0, 4096));
    say("sync_file_range(file, WRITE)", sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE));
    say("sync_file_range(file, all three)",
        sync_file_range(fd, 4096, 8192, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER));
    say("sync_file_range(bad flags)", sync_file_range(fd, 0, 0, 0x100));
    say("sync_file_range(negative offset)", sync_file_range(fd, -1, 0, SYNC_FILE_RANGE_WRITE));
    say("sync_file_range(pipe)", sync_file_range(p[1], 0, 0, SYNC_FILE_RANGE_WRITE));
    say("sync_file_range(bad fd)", sync_file_range(99, 0, 0, SYNC_FILE_RANGE_WRITE));
    char back[16] = "";
    pread(fd, back, 8, 1000);
    printf("the file's bytes: %s\n", back);
    return 0;
}
