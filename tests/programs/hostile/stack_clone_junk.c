// clone with a stack pointer that is not writable memory: on Linux the child faults on its
// first push and SIGSEGV ends the whole process (status 139). The child writes a flag and
// wakes the parent only if it survived its push, so nothing here depends on timing.
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile int survived;

// Raw clone: the child pushes once on its new stack, then sets `survived`, wakes the parent
// and exits; it never returns into C code.
static long clone_push(void *sp) {
    long ret;
    register long r10 __asm__("r10") = 0;
    register long r8 __asm__("r8") = 0;
    unsigned long flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM;
    __asm__ volatile(
        "syscall\n\t"
        "test %%rax, %%rax\n\t"
        "jnz 1f\n\t"
        "push %%rax\n\t"
        "movl $1, survived(%%rip)\n\t"
        "mov $202, %%eax\n\t"          // futex(&survived, FUTEX_WAKE, 1)
        "lea survived(%%rip), %%rdi\n\t"
        "mov $1, %%esi\n\t"
        "mov $1, %%edx\n\t"
        "syscall\n\t"
        "mov $60, %%eax\n\t"           // exit(0)
        "xor %%edi, %%edi\n\t"
        "syscall\n\t"
        "1:\n\t"
        : "=a"(ret)
        : "0"((long)SYS_clone), "D"(flags), "S"(sp), "d"(0L), "r"(r10), "r"(r8)
        : "rcx", "r11", "memory");
    return ret;
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    char *sp;
    if (!strcmp(c, "unmapped")) {
        char *p = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        munmap(p, 4 << 20);
        sp = p + (2 << 20);
    } else if (!strcmp(c, "readonly")) {
        sp = mmap(NULL, 1 << 20, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        sp += 1 << 20;
    } else if (!strcmp(c, "low")) {
        sp = (char *)0x200000;
    } else if (!strcmp(c, "valid")) {
        sp = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        sp += 1 << 20;
    } else {
        fprintf(stderr, "usage: %s unmapped|readonly|low|valid\n", argv[0]);
        return 2;
    }
    printf("clone with stack %s\n", c);
    fflush(stdout);
    long tid = clone_push(sp);
    if (tid < 0) {
        printf("clone failed: %ld\n", tid);
        return 1;
    }
    while (!survived) syscall(SYS_futex, &survived, FUTEX_WAIT, 0, NULL, NULL, 0);
    printf("the child survived its push\n");
    return 0;
}
