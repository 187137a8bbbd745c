/* Mappings a little larger than 2 MiB (2 MiB + 4 KiB, as malloc's and many allocators'
 * headers make them) pack as on Linux, which aligns only whole 2 MiB pages' worth: 1,500 of
 * them fit in `--mem 4G` (hrt aligned each to 2 MiB and stopped at 956, half of the memory in
 * gaps no later mapping fit). */
#include <stdio.h>
#include <sys/mman.h>

int main(void) {
    enum { N = 1500 };
    static void *p[N];
    size_t len = (2 << 20) + 4096;
    int n = 0;
    while (n < N) {
        p[n] = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p[n] == MAP_FAILED) break;
        n++;
    }
    printf("2 MiB + 4 KiB mappings: %d of %d\n", n, N);
    for (int i = 0; i < n; i++) munmap(p[i], len);
    return 0;
}
