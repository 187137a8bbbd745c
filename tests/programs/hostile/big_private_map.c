/* A private, read-only mapping of a file larger than 2 GiB (sparse, so the file costs no disk):
 * every byte must be the file's, past 0x7ffff000 too, where one read(2) of the host stops
 * (Linux's MAX_RW_COUNT). Prints the bytes found at each marker; exit status 0 if all match.
 * Usage: big_private_map DIR */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2)
        return 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/big", argv[1]);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror("open");
        return 2;
    }
    const off_t size = 0x80000000L + 8192;
    const off_t marks[] = {0, 4096, 0x7fffe000L, 0x7ffff000L, 0x7ffff800L, 0x80000000L, size - 8};
    const int n = sizeof marks / sizeof marks[0];
    for (int i = 0; i < n; i++) {
        char m[8];
        snprintf(m, sizeof m, "mark%d", i);
        if (pwrite(fd, m, 8, marks[i]) != 8) {
            perror("pwrite");
            return 2;
        }
    }
    if (ftruncate(fd, size) != 0) {
        perror("ftruncate");
        return 2;
    }
    const char *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 2;
    }
    int bad = 0;
    for (int i = 0; i < n; i++) {
        char want[8];
        snprintf(want, sizeof want, "mark%d", i);
        int ok = memcmp(p + marks[i], want, 8) == 0;
        printf("%#lx: %.5s %s\n", (long)marks[i], ok ? p + marks[i] : "(not the file's)", ok ? "ok" : "WRONG");
        bad += !ok;
    }
    /* Between the markers: the file's holes, zero. */
    const off_t zeros[] = {8192, 0x7fff0000L, 0x80000000L + 4096};
    for (int i = 0; i < 3; i++) {
        int ok = p[zeros[i]] == 0;
        printf("%#lx: zero %s\n", (long)zeros[i], ok ? "ok" : "WRONG");
        bad += !ok;
    }
    munmap((void *)p, size);
    close(fd);
    unlink(path);
    return bad != 0;
}
