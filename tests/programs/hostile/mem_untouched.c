// Memory a program maps but does not touch must cost the host nothing. `mem_untouched GIB
// STRIDE_MIB` maps GIB GiB and writes one byte every STRIDE_MIB MiB (0: touches nothing), then
// unmaps it. The test measures the peak host memory of the process running it.
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

int main(int argc, char **argv) {
    if (argc != 3)
        return 2;
    size_t len = strtoul(argv[1], NULL, 0) << 30, stride = strtoul(argv[2], NULL, 0) << 20;
    unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    size_t touched = 0;
    for (size_t i = 0; stride && i < len; i += stride, touched++)
        p[i] = 1;
    printf("mapped %zu GiB, touched %zu pages\n", len >> 30, touched);
    return munmap(p, len) != 0;
}
