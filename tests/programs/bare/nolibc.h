/* What the test programs without libc share: a raw system call, writing a string, and exit.
 * Included by bare/bare.c and hostile/elf_shared_page.c; general registers only. */
#ifndef HRT_TEST_NOLIBC_H
#define HRT_TEST_NOLIBC_H

static long sys3(long nr, long a, long b, long c) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}

static unsigned long length(const char *s) {
    unsigned long n = 0;
    while (s[n])
        n++;
    return n;
}

static void put(int fd, const char *s) { sys3(1, fd, (long)s, (long)length(s)); }

static __attribute__((noreturn)) void quit(int status) {
    sys3(231, status, 0, 0); /* exit_group */
    __builtin_unreachable();
}

#endif
