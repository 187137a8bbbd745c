/* Per-CPU counters incremented in rseq critical sections (load, add, commit by a store, as
 * librseq's per-CPU counters), by more threads than CPUs: every preemption or move between the
 * load and the store must abort the section, or an increment is lost. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/rseq.h>
static long counters[256 * 8] __attribute__((aligned(64)));
static struct rseq *area(void) { return (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset); }
static long aborts_total;
static void *worker(void *arg) {
    long n = (long)arg, aborts = 0;
    struct rseq *rs = area();
    for (long i = 0; i < n; i++) {
        __asm__ volatile(
            ".pushsection __rseq_cs, \"aw\"\n.balign 32\n3: .long 0, 0\n.quad 1f, 2f - 1f, 4f\n.popsection\n"
            "6: lea 3b(%%rip), %%rax\n"
            "mov %%rax, 8(%[rs])\n"
            "1: movl 0(%[rs]), %%ecx\n"
            "cmpl 4(%[rs]), %%ecx\n"
            "jne 4f\n"
            "shl $6, %%rcx\n"
            "mov (%[c], %%rcx), %%rdx\n"
            "inc %%rdx\n"
            "mov %%rdx, (%[c], %%rcx)\n"
            "2: jmp 5f\n"
            ".long 0x53053053\n"
            "4: incq %[ab]\n"
            "jmp 6b\n"
            "5:\n"
            : [ab] "+m"(aborts)
            : [rs] "r"(rs), [c] "r"(counters)
            : "rax", "rcx", "rdx", "memory", "cc");
    }
    rs->rseq_cs = 0;
    __atomic_add_fetch(&aborts_total, aborts, __ATOMIC_RELAXED);
    return NULL;
}
int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 8;
    long n = argc > 2 ? atol(argv[2]) : 5000000;
    pthread_t t[64];
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, (void *)n);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    long sum = 0;
    for (int i = 0; i < 256; i++) sum += counters[i * 8];
    printf("sum %ld expected %ld %s\n", sum, threads * n, sum == threads * n ? "equal" : "LOST");
    fprintf(stderr, "aborts %ld\n", aborts_total);
}
