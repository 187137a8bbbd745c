/* Signals to a handler on an alternate stack that another thread keeps making read-only and
 * writable again (LTP's signal06): a handler frame that cannot be written is Linux's
 * force_sigsegv, a SIGSEGV to the program's SIGSEGV handler (on the ordinary stack), and the
 * program goes on with its floating-point state intact. Under hrt the program died of
 * SIGSEGV at the first such frame, and with two vCPUs the kernel's write of a frame whose page
 * turned read-only after its check was a kernel panic. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LOOPS 20000
static char altstack[4096 * 10] __attribute__((aligned(4096)));
static volatile double value;
static atomic_int done;

static void handler(int sig) { (void)sig; }

static void *toggle(void *arg) {
    (void)arg;
    while (!atomic_load(&done)) {
        mprotect(altstack, sizeof altstack, PROT_READ);
        mprotect(altstack, sizeof altstack, PROT_READ | PROT_WRITE);
    }
    return NULL;
}

int main(void) {
    stack_t st = {.ss_sp = altstack, .ss_size = sizeof altstack};
    struct sigaction sa = {.sa_handler = handler};
    sigaction(SIGSEGV, &sa, NULL);
    sigaltstack(&st, NULL);
    sa.sa_flags = SA_ONSTACK;
    sigaction(SIGHUP, &sa, NULL);
    pthread_t t;
    pthread_create(&t, NULL, toggle, NULL);
    int pid = getpid(), loop = 0;
    value = 123.456;
    while (value == 123.456 && loop < LOOPS) {
        /* tkill in assembly, so that the compiler keeps `value` in no register across it. */
        long unused;
        __asm__ volatile("syscall" : "=a"(unused) : "a"(SYS_tkill), "D"(pid), "S"(SIGHUP) : "rcx", "r11", "memory");
        loop++;
    }
    atomic_store(&done, 1);
    pthread_join(t, NULL);
    printf("%d signals handled, floating-point value %s\n", loop, value == 123.456 ? "intact" : "lost");
    return 0;
}
