/* mmap's type and flag checks as Linux's: an anonymous mapping must be MAP_SHARED or
 * MAP_PRIVATE (MAP_SHARED_VALIDATE, type 0 or 0xf are EINVAL); a file's MAP_SHARED_VALIDATE
 * refuses flags outside Linux's legacy set (MAP_FIXED_NOREPLACE, unknown bits: EOPNOTSUPP) and
 * MAP_SYNC needs a DAX file (EOPNOTSUPP); MAP_SHARED ignores unknown bits; a file offset
 * past the largest file size is EOVERFLOW (under hrt all of these mapped, or EINVAL).
 * Usage: mmap_type_flags */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void show(const char *what, void *p) {
    printf("%-36s %s\n", what, p == MAP_FAILED ? strerrorname_np(errno) : "mapped");
}

int main(void) {
    char path[] = "/tmp/hrt-mmap-flags-XXXXXX";
    int fd = mkstemp(path);
    unlink(path);
    ftruncate(fd, 8192);
    const int R = PROT_READ, SV = MAP_SHARED_VALIDATE;
    show("anonymous SHARED_VALIDATE", mmap(NULL, 4096, R, SV | MAP_ANONYMOUS, -1, 0));
    show("anonymous type 0", mmap(NULL, 4096, R, MAP_ANONYMOUS, -1, 0));
    show("anonymous, offset -4096", mmap(NULL, 4096, R, MAP_PRIVATE | MAP_ANONYMOUS, -1, -4096));
    show("file SHARED_VALIDATE", mmap(NULL, 4096, R, SV, fd, 0));
    show("file SHARED_VALIDATE, legacy flags", mmap(NULL, 4096, R, SV | MAP_POPULATE | MAP_NORESERVE, fd, 0));
    void *hole = mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(hole, 8192);
    show("file SHARED_VALIDATE|FIXED_NOREPLACE", mmap(hole, 4096, R, SV | MAP_FIXED_NOREPLACE, fd, 0));
    show("file SHARED_VALIDATE|0x200000", mmap(NULL, 4096, R, SV | 0x200000, fd, 0));
    show("file SHARED|0x200000", mmap(NULL, 4096, R, MAP_SHARED | 0x200000, fd, 0));
    show("file SHARED|MAP_SYNC", mmap(NULL, 4096, R, MAP_SHARED | MAP_SYNC, fd, 0));
    show("file type 0xf", mmap(NULL, 4096, R, 0xf, fd, 0));
    show("file offset -4096", mmap(NULL, 4096, R, MAP_SHARED, fd, -4096));
    show("private file offset -4096", mmap(NULL, 4096, R, MAP_PRIVATE, fd, -4096));
    show("private file offset 2^62", mmap(NULL, 4096, R, MAP_PRIVATE, fd, 1L << 62));
    return 0;
}
