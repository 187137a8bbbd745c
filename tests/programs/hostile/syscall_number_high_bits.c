/* System-call numbers with the upper 32 bits of rax set: Linux takes the number as an int,
 * so (1 << 32) | __NR_read is read and (0xffffffff << 32) | __NR_write is write (the Linux
 * kernel's x86 selftest syscall_numbering checks this). Under hrt, read, write, readv and
 * writev with such numbers returned ENOSYS while getpid worked.
 * Usage: syscall_number_high_bits */
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static long raw3(unsigned long nr, long a, long b, long c) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}

int main(void) {
    int fd = open("/dev/null", O_RDWR);
    char byte = 'x';
    struct iovec iov = {&byte, 1};
    const unsigned long high[] = {0, 1UL << 32, 0xffffffffUL << 32};
    const struct {
        const char *name;
        int nr;
        long arg;
        long len;
    } calls[] = {
        {"read", SYS_read, (long)&byte, 1},
        {"write", SYS_write, (long)&byte, 1},
        {"readv", SYS_readv, (long)&iov, 1},
        {"writev", SYS_writev, (long)&iov, 1},
    };
    for (int h = 0; h < 3; h++)
        for (int i = 0; i < 4; i++)
            printf("%-6s with upper bits %#010lx: %ld\n", calls[i].name, high[h] >> 32,
                   raw3(high[h] | calls[i].nr, fd, calls[i].arg, calls[i].len));
    printf("getpid with upper bits: %s\n", raw3((1UL << 32) | SYS_getpid, 0, 0, 0) == getpid() ? "the pid" : "wrong");
    printf("number -1: %ld\n", raw3(0xffffffffUL, 0, 0, 0));
    return 0;
}
