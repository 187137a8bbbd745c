// Maps 64 MiB of private anonymous memory at a time, never touched, until mmap fails, then
// says how it failed and how much it got (a reservation Linux grants without backing it;
// under hrt the program's memory, --mem, is the limit). `map_until_full MAX_MIB`.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int main(int argc, char **argv) {
    long max = argc > 1 ? atol(argv[1]) : 4096;
    long got = 0;
    int err = 0;
    while (got < max) {
        void *p = mmap(NULL, 64 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            err = errno;
            break;
        }
        got += 64;
    }
    printf("mapped %ld MiB, then %s\n", got, err ? strerror(err) : "stopped");
    return 0;
}
