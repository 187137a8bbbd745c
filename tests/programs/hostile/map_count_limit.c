/* Mappings until mmap fails, each apart from the others (Linux merges touching ones): Linux
 * stops at vm.max_map_count (65,530 areas) with ENOMEM, and an munmap that would split one
 * area in two is then ENOMEM too (LTP's munmap04). Under hrt mmap went on, and a program that
 * kept its mappings in a table of that size (as munmap04 does) overflowed it. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX 70000
static void *maps[MAX];

int main(void) {
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t addr = 0x10000000UL;
    int n = 0, err = 0;
    while (n < MAX) {
        void *p = mmap((void *)addr, 3 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        addr += 6 * page;
        if (p == MAP_FAILED && errno == EEXIST)
            continue;
        if (p == MAP_FAILED) {
            err = errno;
            break;
        }
        maps[n++] = p;
    }
    printf("mappings until mmap failed: between 65000 and 65530: %d, with %s\n", n > 65000 && n <= 65530,
           err ? strerror(err) : "none");
    printf("munmap of a page in the middle of one: %s\n",
           munmap((char *)maps[2] + page, page) == 0 ? "unmapped" : strerror(errno));
    for (int i = 0; i < n; i++)
        munmap(maps[i], 3 * page);
    void *p = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("after unmapping them all, mmap: %s\n", p == MAP_FAILED ? strerror(errno) : "mapped");
    return 0;
}
