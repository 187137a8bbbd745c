/* A 1 GiB zero-initialised static array (.bss). Checks that sampled bytes start as zero, writes
 * one byte in every 4 KiB page, reads them back and prints a checksum. Exit status 0 when the
 * array was zero and every byte read back as written. */
#include <stdint.h>
#include <stdio.h>

#define SIZE (1ul << 30)
#define PAGE 4096ul

static unsigned char big[SIZE];

int main(void) {
    int failures = 0;
    /* Zero before use: the first and last byte of every 2 MiB, and a byte in every page of the
     * first and last 2 MiB. */
    unsigned long nonzero = 0;
    for (unsigned long off = 0; off < SIZE; off += 2ul << 20)
        nonzero += big[off] != 0;
    for (unsigned long off = (2ul << 20) - 1; off < SIZE; off += 2ul << 20)
        nonzero += big[off] != 0;
    for (unsigned long off = 123; off < (2ul << 20); off += PAGE)
        nonzero += (big[off] != 0) + (big[SIZE - (2ul << 20) + off] != 0);
    printf("sampled bytes that were not zero: %lu\n", nonzero);
    failures += nonzero != 0;

    /* One byte per 4 KiB page, at an offset that moves through the page. */
    unsigned long pages = SIZE / PAGE;
    for (unsigned long p = 0; p < pages; p++)
        big[p * PAGE + (p * 67) % PAGE] = (unsigned char)(p * 2654435761u >> 13);
    uint64_t sum = 0, weighted = 0;
    unsigned long wrong = 0;
    for (unsigned long p = 0; p < pages; p++) {
        unsigned char v = big[p * PAGE + (p * 67) % PAGE];
        wrong += v != (unsigned char)(p * 2654435761u >> 13);
        sum += v;
        weighted = weighted * 31 + v;
    }
    printf("pages touched: %lu\n", pages);
    printf("bytes read back wrong: %lu\n", wrong);
    printf("checksum: %llu %016llx\n", (unsigned long long)sum, (unsigned long long)weighted);
    failures += wrong != 0;
    printf("array size: %lu MiB\n", (unsigned long)(sizeof big >> 20));
    return failures ? 1 : 0;
}
