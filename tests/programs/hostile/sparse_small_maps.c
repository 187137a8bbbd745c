/* Many small anonymous mappings, each touched a little (argv[1] mappings of argv[2] KiB, one
 * byte written at a different 4 KiB page of each): what the program wrote reads back, then
 * every other mapping is unmapped and mapped again, and the new ones read zero where the old
 * ones had data (sampled: every 16th page), while the others keep theirs. The host memory this
 * costs is the test's business (monitor/tests/hostile_memory.rs). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static char *map(long size) {
    char *p = mmap(0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

static long spot(long i, long size) { return (i * 4096 + i % 4000) % size; }

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 2000, size = (argc > 2 ? atol(argv[2]) : 1024) << 10;
    char **maps = malloc(n * sizeof *maps);
    for (long i = 0; i < n; i++) {
        maps[i] = map(size);
        maps[i][spot(i, size)] = (char)(i % 251 + 1);
    }
    long bad = 0;
    for (long i = 0; i < n; i++)
        bad += maps[i][spot(i, size)] != (char)(i % 251 + 1);
    printf("%ld mappings of %ld KiB written, %ld read back wrong\n", n, size >> 10, bad);
    for (long i = 0; i < n; i += 2)
        if (munmap(maps[i], size)) {
            perror("munmap");
            return 1;
        }
    long nonzero = 0;
    for (long i = 0; i < n; i += 2) {
        maps[i] = map(size);
        for (long at = 0; at < size; at += 16 * 4096)
            nonzero += maps[i][at] != 0;
        nonzero += maps[i][spot(i, size)] != 0;
        maps[i][spot(i + 1, size)] = 7;
    }
    for (long i = 1; i < n; i += 2)
        bad += maps[i][spot(i, size)] != (char)(i % 251 + 1);
    printf("remapped: %ld non-zero bytes in fresh mappings, %ld kept bytes wrong\n", nonzero, bad);
    return bad || nonzero;
}
