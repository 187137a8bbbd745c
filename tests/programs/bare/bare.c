/* A test program without libc, hence without SSE instructions: the one kind of program whose
 * ring-0 run (--app-ring 0) works where guest ring 0 is emulated (PVM hosts cannot emulate SSE).
 * Built with -nostdlib -ffreestanding -mgeneral-regs-only. Usage: bare MODE [ARG]
 *   hello       one line on stdout, one on stderr, exit 0
 *   exit N      exit_group(N)
 *   segv        write to address 0x10 (SIGSEGV)
 *   ud          execute ud2 (SIGILL)
 *   div         divide by zero (SIGFPE)
 *   redzone N   keep 128 bytes below the stack pointer filled (as leaf functions may) for N
 *               rounds and check them every round: an interrupt that pushes its frame onto the
 *               program's stack breaks it (exit 1) */

typedef unsigned long u64;

#include "nolibc.h"

static int same(const char *a, const char *b) {
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

static long number(const char *s) {
    long n = 0;
    while (*s >= '0' && *s <= '9')
        n = n * 10 + (*s++ - '0');
    return n;
}

/* Returns 0 if the 16 words below rsp kept their pattern for all rounds, else the round + 1. */
u64 redzone_rounds(u64 rounds);
__asm__(".text\n"
        ".globl redzone_rounds\n"
        "redzone_rounds:\n"
        "    xor %rax, %rax\n"
        "1:  inc %rax\n"
        "    cmp %rdi, %rax\n"
        "    ja 4f\n"
        "    mov $16, %rcx\n"
        "2:  mov %rcx, %rdx\n"
        "    imul $0x3779b9, %rdx\n"
        "    add %rax, %rdx\n"
        "    neg %rcx\n"
        "    mov %rdx, (%rsp,%rcx,8)\n"
        "    neg %rcx\n"
        "    dec %rcx\n"
        "    jnz 2b\n"
        "    mov $200, %r8\n" /* spin with the pattern in place */
        "5:  dec %r8\n"
        "    jnz 5b\n"
        "    mov $16, %rcx\n"
        "3:  mov %rcx, %rdx\n"
        "    imul $0x3779b9, %rdx\n"
        "    add %rax, %rdx\n"
        "    neg %rcx\n"
        "    cmp %rdx, (%rsp,%rcx,8)\n"
        "    jne 6f\n"
        "    neg %rcx\n"
        "    dec %rcx\n"
        "    jnz 3b\n"
        "    jmp 1b\n"
        "4:  xor %rax, %rax\n"
        "6:  ret\n");

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "hello";
    if (same(mode, "hello")) {
        put(1, "Hello from a program without libc\n");
        put(2, "bare: hello on stderr\n");
        return 0;
    }
    if (same(mode, "exit") && argc > 2)
        quit((int)number(argv[2]));
    if (same(mode, "segv")) {
        put(1, "about to write to address 0x10\n");
        int *volatile target = (int *)0x10;
        *target = 42;
    }
    if (same(mode, "ud")) {
        put(1, "about to execute ud2\n");
        __asm__ volatile("ud2");
    }
    if (same(mode, "div")) {
        put(1, "about to divide by zero\n");
        volatile long zero = 0;
        volatile long x = 42 / zero;
        (void)x;
    }
    if (same(mode, "redzone") && argc > 2) {
        u64 broken = redzone_rounds((u64)number(argv[2]));
        if (broken) {
            put(1, "red zone overwritten\n");
            return 1;
        }
        put(1, "red zone intact\n");
        return 0;
    }
    put(2, "usage: bare hello|exit N|segv|ud|div|redzone N\n");
    return 2;
}

/* The entry point: argc at [rsp], argv after it. */
__asm__(".text\n"
        ".globl _start\n"
        "_start:\n"
        "    mov (%rsp), %rdi\n"
        "    lea 8(%rsp), %rsi\n"
        "    and $-16, %rsp\n"
        "    call main\n"
        "    mov %eax, %edi\n"
        "    mov $231, %eax\n"
        "    syscall\n"
        "    hlt\n");
