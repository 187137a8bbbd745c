/* A static program with a 2 MiB read-only table and a 1.5 MiB initialized writable table,
 * every word different: segments this large are copied into place by the monitor from its
 * own view of the file, and are never in the guest's copy of the file. Every word must read
 * as initialized, at its place. */
#include <stdio.h>

#define W1(i) ((unsigned)(i) * 2654435761u + 12345u)

/* Built by the assembler (a C initializer this large takes gcc ~20 s). */
#define WORDS(section, name, first, count)                                                     \
    asm(".pushsection " section "\n.balign 64\n" name ":\n.set i, " #first "\n.rept " #count \
        "\n.long (i * 2654435761 + 12345) & 0xffffffff\n.set i, i + 1\n.endr\n.popsection")
WORDS(".rodata", "table", 0, 524288);
WORDS(".data", "data", 7, 393216);
extern const unsigned table[524288];
extern unsigned data[393216];

int main(void) {
    unsigned long n = 524288, m = 393216, bad = 0;
    for (unsigned long i = 0; i < n; i++) bad += table[i] != W1(i);
    for (unsigned long i = 0; i < m; i++) bad += data[i] != W1(i + 7);
    for (unsigned long i = 0; i < m; i++) data[i] ^= 1;
    for (unsigned long i = 0; i < m; i++) bad += data[i] != (W1(i + 7) ^ 1);
    printf("big_rodata: %lu read-only and %lu writable words, %lu differ\n", n, m, bad);
    return bad != 0;
}
