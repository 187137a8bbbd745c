/* MADV_DONTNEED on the program's own image, which Linux maps from its file: the pages read
 * the file's bytes again. Initialized data the program changed comes back as the file has it,
 * zero-initialized data (.bss, anonymous) reads zero, the text keeps running (its system calls
 * too, made many times before and after), and a function the program patched after making its
 * page writable is the file's again. Until stop 98 hrt's kernel, which loads the image itself,
 * zeroed all of it: a DONTNEED of the text crashed the program. Last, an anonymous mapping
 * placed over a page of the data must not carry the program's name in /proc/self/maps (it did,
 * since the loader's record of its segments outlived them). Prints one line per case; the
 * same on any machine. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096

__attribute__((aligned(PAGE))) int initialized[2 * PAGE / sizeof(int)] = {1, 2, 3, [1000] = 1000, [2047] = 2047};
__attribute__((aligned(PAGE))) int zeroed[PAGE / sizeof(int)];
extern char __executable_start[], etext[];

/* On pages of its own, so that patching and dropping it touches nothing else. */
__attribute__((noipa, aligned(PAGE))) int answer(void) {
    return 42;
}
__attribute__((noipa, aligned(PAGE))) int after_answer(void) {
    return 0;
}

static long calls(int n) {
    long same = 0;
    for (int i = 0; i < n; i++)
        same += getppid() == getppid();
    return same;
}

int main(void) {
    printf("calls before: %ld\n", calls(2000));
    initialized[0] = 99;
    initialized[2047] = -1;
    int r = madvise(initialized, sizeof initialized, MADV_DONTNEED);
    printf("initialized data after DONTNEED (%d): %d %d %d %d\n", r, initialized[0], initialized[1], initialized[1000], initialized[2047]);
    memset(zeroed, 5, sizeof zeroed);
    r = madvise(zeroed, sizeof zeroed, MADV_DONTNEED);
    printf("zero-initialized data after DONTNEED (%d): %d %d\n", r, zeroed[0], zeroed[1023]);
    uintptr_t lo = ((uintptr_t)__executable_start + PAGE - 1) & ~(uintptr_t)(PAGE - 1);
    uintptr_t hi = (uintptr_t)etext & ~(uintptr_t)(PAGE - 1);
    r = madvise((void *)lo, hi - lo, MADV_DONTNEED);
    printf("text after DONTNEED (%d): calls %ld, answer %d\n", r, calls(2000), answer());
    /* Patch answer()'s immediate 42 (the first such byte in its code) to 43. */
    unsigned char *code = (unsigned char *)answer;
    r = mprotect(code, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC);
    unsigned char *imm = memchr(code, 42, (size_t)((unsigned char *)after_answer - code));
    if (imm)
        *imm = 43;
    printf("patched (%d, %s): answer %d\n", r, imm ? "found" : "not found", answer());
    r = madvise(code, PAGE, MADV_DONTNEED);
    printf("patched page after DONTNEED (%d): answer %d\n", r, answer());
    char *page = (char *)initialized + PAGE;
    void *fresh = mmap(page, PAGE, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char line[512], start[32];
    snprintf(start, sizeof start, "%08lx-", (unsigned long)page);
    FILE *maps = fopen("/proc/self/maps", "r");
    int named = -1;
    while (maps && fgets(line, sizeof line, maps))
        if (strncmp(line, start, strlen(start)) == 0)
            named = strchr(line, '/') != NULL;
    printf("an anonymous mapping over a data page (%s): named after a file in maps: %d\n", fresh == page ? "placed" : "failed", named);
    return 0;
}
