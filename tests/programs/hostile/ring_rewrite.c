/* System-call sites rewritten into calls (issue 14): what must not change.
 *   redzone   a leaf function keeps a value in the red zone across a raw syscall: a rewrite
 *             into `call` would overwrite it (the kernel must keep SYSCALL there)
 *   plain     a function without red-zone use, called from two threads at once while its
 *             site gets rewritten: every result must be right
 *   nullcall  a call through a NULL function pointer: SIGSEGV, as on Linux, although page 0
 *             holds the call gate
 *   nullwrite a store through a NULL pointer: SIGSEGV
 *   regs      a raw getpid keeps every register but rax, rcx and r11 (SYSCALL's contract), also
 *             once the site is a call served by the kernel's fast path
 *   signal    a thread that makes nothing but fast calls (getpid) still gets the signal another
 *             thread sends it, at once, not at some later kernel entry */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__asm__(".text\n"
        ".globl rz_leaf\n.type rz_leaf,@function\nrz_leaf:\n"
        "  movq %rdi, -8(%rsp)\n"
        "  mov $39, %eax\n"
        "  syscall\n"
        "  movq -8(%rsp), %rax\n"
        "  ret\n"
        ".size rz_leaf, .-rz_leaf\n"
        ".globl plain_getpid\n.type plain_getpid,@function\nplain_getpid:\n"
        "  mov $39, %eax\n"
        "  syscall\n"
        "  ret\n"
        ".size plain_getpid, .-plain_getpid\n"
        /* Returns how many of rdi rsi rdx r10 r8 r9 rbx rbp r12-r15 a getpid changed. */
        ".globl regs_getpid\n.type regs_getpid,@function\nregs_getpid:\n"
        "  push %rbx\n  push %rbp\n  push %r12\n  push %r13\n  push %r14\n  push %r15\n"
        "  mov $101, %rdi\n  mov $102, %rsi\n  mov $103, %rdx\n  mov $104, %r10\n"
        "  mov $105, %r8\n  mov $106, %r9\n  mov $107, %rbx\n  mov $108, %rbp\n"
        "  mov $109, %r12\n  mov $110, %r13\n  mov $111, %r14\n  mov $112, %r15\n"
        "  mov $39, %eax\n"
        "  syscall\n"
        "  xor %eax, %eax\n"
        "  cmp $101, %rdi\n  setne %cl\n  movzbl %cl, %ecx\n  add %rcx, %rax\n"
        "  cmp $102, %rsi\n  setne %cl\n  add %rcx, %rax\n"
        "  cmp $103, %rdx\n  setne %cl\n  add %rcx, %rax\n"
        "  cmp $104, %r10\n  setne %cl\n  add %rcx, %rax\n"
        "  cmp $105, %r8\n  setne %cl\n  add %rcx, %rax\n"
        "  cmp $106, %r9\n  setne %cl\n  add %rcx, %rax\n"
        "  cmp $107, %rbx\n  setne %cl\n  add %rcx, %rax\n"
        "  cmp $108, %rbp\n  setne %cl\n  add %rcx, %rax\n"
        "  cmp $109, %r12\n  setne %cl\n  add %rcx, %rax\n"
        "  cmp $110, %r13\n  setne %cl\n  add %rcx, %rax\n"
        "  cmp $111, %r14\n  setne %cl\n  add %rcx, %rax\n"
        "  cmp $112, %r15\n  setne %cl\n  add %rcx, %rax\n"
        "  pop %r15\n  pop %r14\n  pop %r13\n  pop %r12\n  pop %rbp\n  pop %rbx\n"
        "  ret\n"
        ".size regs_getpid, .-regs_getpid\n");
long regs_getpid(void);
long rz_leaf(long v);
long plain_getpid(void);

enum { CALLS = 20000 };
static long bad[2];

static void *hammer(void *arg) {
    long i = (long)arg, pid = getpid();
    for (int k = 0; k < CALLS; k++)
        bad[i] += plain_getpid() != pid;
    return NULL;
}

static volatile sig_atomic_t flagged, calling;
static void on_usr1(int sig) { flagged = sig; }

/* Sets `calling` after its first call: the signal goes only then (a thread not yet started
 * on a loaded host would take it before making any). */
static void *fast_caller(void *arg) {
    long calls = 0, pid = getpid();
    while (!flagged) {
        calls += plain_getpid() == pid;
        calling = 1;
    }
    *(long *)arg = calls;
    return NULL;
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    if (!strcmp(c, "redzone")) {
        long wrong = 0;
        for (long k = 1; k <= CALLS; k++)
            wrong += rz_leaf(k * 7) != k * 7;
        printf("red-zone values lost: %ld of %d\n", wrong, CALLS);
    } else if (!strcmp(c, "plain")) {
        pthread_t t[2];
        for (long i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, hammer, (void *)i);
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        printf("wrong getpid results: %ld of %d\n", bad[0] + bad[1], 2 * CALLS);
    } else if (!strcmp(c, "regs")) {
        long changed = 0;
        for (int k = 0; k < CALLS; k++)
            changed += regs_getpid();
        printf("registers changed by getpid: %ld\n", changed);
    } else if (!strcmp(c, "signal")) {
        signal(SIGUSR1, on_usr1);
        long calls = 0;
        pthread_t t;
        pthread_create(&t, NULL, fast_caller, &calls);
        while (!calling)
            usleep(1000);
        usleep(50000);
        pthread_kill(t, SIGUSR1);
        pthread_join(t, NULL);
        printf("the calling thread saw signal %d after making calls: %d\n", (int)flagged, calls > 0);
    } else if (!strcmp(c, "nullcall")) {
        /* NULL, without the compiler knowing (argc is 2 here). */
        void (*f)(void) = (void (*)(void))(long)(argc - 2);
        printf("calling NULL\n");
        fflush(stdout);
        f();
        printf("still alive\n");
    } else if (!strcmp(c, "nullwrite")) {
        volatile int *p = (volatile int *)(long)(argc - 2);
        printf("writing to NULL\n");
        fflush(stdout);
        *p = 1;
        printf("still alive\n");
    } else {
        fprintf(stderr, "usage: %s redzone|plain|nullcall|nullwrite\n", argv[0]);
        return 2;
    }
    return 0;
}
