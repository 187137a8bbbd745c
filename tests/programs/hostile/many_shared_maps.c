/* Maps one page of a shared memory file again and again until mmap says ENOMEM (each mapping
 * a mapping of its own, as Open POSIX's mmap 24-1 does), checking that every mapping shows the
 * file's bytes and that private memory made before keeps its bytes; then unmaps them all and
 * checks again, and that a fresh mapping works. The host's limit on a process's mappings stands
 * behind both sides' ENOMEM (hrt's comes earlier: each guest mapping costs it host mappings);
 * under hrt a mapping past that limit used to leave guest RAM with a hole ("the program's
 * memory is damaged").
 * Usage: many_shared_maps */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX 200000

static void *maps[MAX];

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int fd = memfd_create("many", 0);
    if (fd < 0 || ftruncate(fd, 4096) != 0)
        return 1;
    char *data = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    strcpy(data, "shared bytes");
    size_t plen = 64 << 20;
    unsigned char *priv = mmap(NULL, plen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (size_t i = 0; i < plen; i += 4096)
        priv[i] = (unsigned char)(i >> 12);
    long n = 0, wrong = 0;
    int err = 0;
    while (n < MAX) {
        /* PROT_READ only: neighbours never merge into one mapping (different file offsets
         * would not either; this keeps the count one per call). */
        char *p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            err = errno;
            break;
        }
        wrong += strcmp(p, "shared bytes") != 0;
        maps[n++] = p;
    }
    long bad = 0;
    for (size_t i = 0; i < plen; i += 4096)
        bad += priv[i] != (unsigned char)(i >> 12);
    printf("mapped until errno %d (more than 1,000: %d), wrong contents %ld, private pages changed %ld\n", err,
           n > 1000, wrong, bad);
    long failed = 0;
    for (long i = 0; i < n; i++)
        failed += munmap(maps[i], 4096) != 0;
    bad = 0;
    for (size_t i = 0; i < plen; i += 4096)
        bad += priv[i] != (unsigned char)(i >> 12);
    char *again = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    printf("unmapped all (%ld failed); private pages changed %ld; a new mapping reads \"%s\"\n", failed, bad,
           again == MAP_FAILED ? "(failed)" : again);
    printf("many shared maps: done\n");
    return 0;
}
