// How much of its memory a program can really use. `mem_capacity 1m CAP_MIB` mallocs 1 MiB
// blocks, writing one byte per page, until malloc fails or CAP_MIB are in use, and says whether
// it reached CAP_MIB. `mem_capacity 1g COUNT` mallocs 1 GiB blocks (touching their first and
// last page) until malloc fails or it has COUNT, and prints how many it got. Natively both stop
// at the cap; under HRT the cap is chosen below the VM's memory, so the program must reach it.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 3)
        return 2;
    size_t cap = strtoul(argv[2], NULL, 0);
    if (!strcmp(argv[1], "1m")) {
        size_t got = 0;
        while (got < cap) {
            char *p = malloc(1 << 20);
            if (!p)
                break;
            for (size_t i = 0; i < (1 << 20); i += 4096)
                p[i] = 1;
            got++;
        }
        fprintf(stderr, "1 MiB blocks: %zu\n", got);
        printf("1 MiB blocks up to %zu MiB: %s\n", cap, got >= cap ? "reached" : "FAILED EARLY");
    } else {
        size_t got = 0;
        while (got < cap) {
            char *p = malloc(1ul << 30);
            if (!p)
                break;
            p[0] = p[(1ul << 30) - 1] = 1;
            got++;
        }
        printf("1 GiB blocks (at most %zu): %zu\n", cap, got);
    }
    return 0;
}
