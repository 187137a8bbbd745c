/* System-call sites rewritten into calls (issue 14): what must not change.
 *   redzone   a leaf function keeps a value in the red zone across a raw syscall: a rewrite
 *             into `call` would overwrite it (the kernel must keep SYSCALL there)
 *   plain     a function without red-zone use, called from two threads at once while its
 *             site gets rewritten: every result must be right
 *   nullcall  a call through a NULL function pointer: SIGSEGV, as on Linux, although page 0
 *             holds the call gate
 *   nullwrite a store through a NULL pointer: SIGSEGV */
#include <pthread.h>
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
        ".size plain_getpid, .-plain_getpid\n");
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
