/* A thread writes a page over and over while the main thread unmaps it and maps a fresh page
 * at the same address (MAP_FIXED), 50 times. The writer either faults in the gap (its SIGSEGV
 * handler jumps out) or writes into the new page; either way the program goes on. Under hrt
 * a write that faulted on a TLB entry older than the new mapping ran a privileged INVLPG in
 * ring 3: a KERNEL PANIC (#GP) in most runs at --cpus 2 and 4.
 * Usage: remap_under_writer */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile long *page;
static atomic_int started, stop;
static __thread sigjmp_buf out;

static void on_segv(int sig) {
    (void)sig;
    siglongjmp(out, 1);
}

static void *writer(void *arg) {
    (void)arg;
    if (sigsetjmp(out, 1))
        return NULL;
    atomic_store(&started, 1);
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        page[0]++;
    return NULL;
}

int main(void) {
    signal(SIGSEGV, on_segv);
    int fresh_zero = 0;
    for (int round = 0; round < 50; round++) {
        char *base = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        page = (volatile long *)base;
        atomic_store(&started, 0);
        atomic_store(&stop, 0);
        pthread_t t;
        pthread_create(&t, NULL, writer, NULL);
        while (!atomic_load(&started))
            ;
        usleep(1000);
        munmap(base, 4096);
        char *again = mmap(base, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        /* The new page starts at zero; the writer may have counted in it since. */
        fresh_zero += again == base;
        usleep(1000);
        atomic_store(&stop, 1);
        pthread_join(t, NULL);
        munmap(base, 4096);
    }
    printf("50 rounds, the page mapped again at its address %d times\n", fresh_zero);
    return 0;
}
