/* Reads standard input to end of file with read(2) and prints the byte count, the line count,
 * a 64-bit FNV-1a checksum and a histogram digest. Exit status 0, or 1 when read fails. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

int main(void) {
    static unsigned char buf[1 << 16];
    uint64_t bytes = 0, lines = 0, fnv = 0xcbf29ce484222325ull;
    uint64_t hist[256] = {0};
    for (;;) {
        ssize_t n = read(0, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            perror("read");
            return 1;
        }
        if (n == 0)
            break;
        for (ssize_t i = 0; i < n; i++) {
            fnv ^= buf[i];
            fnv *= 0x100000001b3ull;
            hist[buf[i]]++;
            lines += buf[i] == '\n';
        }
        bytes += (uint64_t)n;
    }
    uint64_t hd = 0;
    int distinct = 0;
    for (int i = 0; i < 256; i++) {
        hd = hd * 1000003u + hist[i];
        distinct += hist[i] != 0;
    }
    printf("bytes %llu\n", (unsigned long long)bytes);
    printf("lines %llu\n", (unsigned long long)lines);
    printf("distinct byte values %d\n", distinct);
    printf("fnv1a %016llx\n", (unsigned long long)fnv);
    printf("histogram digest %016llx\n", (unsigned long long)hd);
    return 0;
}
