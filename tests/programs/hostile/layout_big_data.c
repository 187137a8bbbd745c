/* A static program whose file is 15 MiB: an initialized 15 MiB array in .data. The file must
 * load wherever the monitor puts it in guest memory and the array read as initialized. */
#include <stdio.h>

#define SIZE (15 << 20)
static unsigned char big[SIZE] = {1, 2, 3, [SIZE / 2] = 42, [SIZE - 1] = 99};

int main(void) {
    unsigned long sum = 0;
    for (unsigned long i = 0; i < SIZE; i++) sum += big[i] * (i % 251 + 1);
    printf("big_data: %lu bytes, first %d %d %d, middle %d, last %d, weighted sum %lu\n", (unsigned long)SIZE,
           big[0], big[1], big[2], big[SIZE / 2], big[SIZE - 1], sum);
    return 0;
}
