/* New code placed where a function of the program was (an anonymous MAP_FIXED page over it, as
 * a JIT or a hot-patcher may reuse the address): it keeps a value in the red zone across a
 * system call whose `syscall` lies inside the old function's symbol extent, while the red-zone
 * store and load lie outside it. Under hrt the rewriter took the old symbol's extent for the
 * new code's, saw no red-zone use there, and rewrote the site: the `call` pushed its return
 * address over the kept value (right 1 time in 3,000 until stop 98). Prints how often the new
 * code returned its argument; the same on any machine. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
/* A small function alone on its page: its symbol says [victim, victim + 16). */
__asm__(".text\n.p2align 12\n.globl victim\n.type victim,@function\nvictim:\n"
        "mov $39, %eax\nsyscall\nret\n.size victim, 16\n.p2align 12\n");
long victim(void);
int main(void) {
    long s = 0;
    for (int i = 0; i < 200; i++) s += victim() == getpid();
    unsigned char *page = (unsigned char *)victim;
    /* New code over the page: at +32 store rdi in the red zone and jump to +0, where
     * `mov $110, %eax; syscall` (inside the old symbol's extent) then jumps to +64, which
     * loads the red zone back and returns it. */
    unsigned char code[96];
    memset(code, 0xcc, sizeof code);
    unsigned char at0[] = {0xb8, 110, 0, 0, 0, 0x0f, 0x05, 0xeb, 64 - 9};          /* mov; syscall; jmp +64 */
    unsigned char at32[] = {0x48, 0x89, 0x7c, 0x24, 0xf8, 0xe9, 0, 0, 0, 0};     /* mov %rdi,-8(%rsp); jmp 0 */
    int rel = 0 - (32 + 10);
    memcpy(at32 + 6, &rel, 4);
    unsigned char at64[] = {0x48, 0x8b, 0x44, 0x24, 0xf8, 0xc3};                 /* mov -8(%rsp),%rax; ret */
    memcpy(code, at0, sizeof at0);
    memcpy(code + 32, at32, sizeof at32);
    memcpy(code + 64, at64, sizeof at64);
    void *p = mmap(page, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(page, code, sizeof code);
    long (*fn)(long) = (long (*)(long))(page + 32);
    long ok = 0;
    for (long i = 0; i < 3000; i++) ok += fn(i * 7 + 1) == i * 7 + 1;
    printf("remapped %s, new code right %ld of 3000 times (%ld)\n", p == page ? "yes" : "no", ok, s);
    return 0;
}
