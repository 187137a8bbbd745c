/* Threads pass a token around a ring by spinning on plain loads, as hand-written pipelines
 * and NPB LU do, with no PAUSE and no system call in the wait: under hrt, with more threads
 * than vCPUs, the kernel's looks find such loops and rewrite them to yield their vCPU at
 * every round (`linux::spin_sites`). Two shapes of wait:
 * - `global`: `while (turn != me);` on a global (a RIP-relative load, which the rewritten
 *   loop's slot replays from another address);
 * - `registers`: an assembly loop (two loads, then the compare) with sentinel values
 *   in every register the loop does not use, caller-saved ones (rcx, r11: what SYSCALL and
 *   the kernel's entry clobber) and vector registers included, checked after each wait: a
 *   rewritten loop's yield must change none of them, nor the flags the loop's branch reads;
 * - `short`: `1: mov (%rdi), %eax; cmp %esi, %eax; jne 1b`, 4 bytes before its back branch,
 *   which the rewritten window then holds too;
 * - `patch`: the turns wait in `wait_magic` (`while (*p != 0x11223344);`); then the program
 *   makes that code writable and patches the immediate to 0x55667788, as a hot-patching
 *   framework would: a waiter must ignore the old value and pass at the new one (a rewritten
 *   loop gets its own bytes back when its code becomes writable).
 * Prints how many turns each thread took and whether every register survived; the output is
 * the same on any machine. Usage: spin_token_ring [global|registers|short|patch] [threads]
 * [rounds]. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_THREADS 16

static volatile int turn;
static long counts[MAX_THREADS];
static long broken[MAX_THREADS];
static int nthreads, rounds;
static int use_registers, use_short, use_patch;

#define MAGIC 0x11223344
#define PATCHED 0x55667788

/* The wait the `patch` shape rewrites in place: its own function, on its own lines. */
__attribute__((noinline, aligned(64))) static void wait_magic(volatile int *p) {
    while (*p != MAGIC)
        ;
}
__attribute__((noinline, aligned(64))) static void after_wait_magic(void) { __asm__ volatile(""); }

static volatile int gate[16];
static volatile int passed;

static void *gate_waiter(void *unused) {
    (void)unused;
    wait_magic(gate);
    passed = 1;
    return NULL;
}

/* Patches MAGIC into PATCHED in wait_magic's code; returns how many it found. */
static int patch_wait_magic(void) {
    unsigned char *from = (unsigned char *)wait_magic, *to = (unsigned char *)after_wait_magic;
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *base = (unsigned char *)((unsigned long)from & ~(unsigned long)(page - 1));
    if (mprotect(base, (size_t)(to - base) + (size_t)page, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
        perror("mprotect");
        exit(3);
    }
    int found = 0;
    unsigned int old = MAGIC, new = PATCHED;
    for (unsigned char *q = from; q + 4 <= to; q++)
        if (memcmp(q, &old, 4) == 0) {
            memcpy(q, &new, 4);
            found++;
        }
    __builtin___clear_cache((char *)from, (char *)to);
    return found;
}

/* The shortest wait: two 2-byte instructions and the back branch. */
static void wait_short(volatile int *flag, int want) {
    __asm__ volatile("1:\n\t"
                     "mov (%%rdi), %%eax\n\t"
                     "cmp %%esi, %%eax\n\t"
                     "jne 1b\n\t"
                     :
                     : "D"(flag), "S"(want)
                     : "rax", "cc", "memory");
}

/* Waits until *flag == want, with sentinels in rcx, rdx, rsi, rdi, r8-r11, xmm0 and xmm15;
 * returns how many of them changed. The loop reads the flag twice per round, so that its
 * head holds two loads before the compare (a window of two instructions when rewritten). */
static long wait_with_sentinels(volatile int *flag, int want) {
    long changed;
    __asm__ volatile(
        "mov $0x1111111111111111, %%rcx\n\t"
        "mov $0x2222222222222222, %%rdx\n\t"
        "mov $0x3333333333333333, %%rsi\n\t"
        "mov $0x4444444444444444, %%rdi\n\t"
        "mov $0x5555555555555555, %%r8\n\t"
        "mov $0x6666666666666666, %%r9\n\t"
        "mov $0x7777777777777777, %%r10\n\t"
        "mov $0x0bbbbbbbbbbbbbbb, %%r11\n\t"
        "movq %%rcx, %%xmm0\n\t"
        "movq %%rdx, %%xmm15\n\t"
        "1:\n\t"
        "mov (%[flag]), %%r12d\n\t"
        "mov (%[flag]), %%eax\n\t"
        "cmp %[want], %%eax\n\t"
        "jne 1b\n\t"
        "xor %[changed], %[changed]\n\t"
        "mov $0x1111111111111111, %%rax\n\t"
        "cmp %%rax, %%rcx\n\t"
        "setne %%al\n\t"
        "movzbq %%al, %%rax\n\t"
        "add %%rax, %[changed]\n\t"
        "mov $0x2222222222222222, %%rax\n\t"
        "cmp %%rax, %%rdx\n\t"
        "setne %%al\n\t"
        "movzbq %%al, %%rax\n\t"
        "add %%rax, %[changed]\n\t"
        "mov $0x3333333333333333, %%rax\n\t"
        "cmp %%rax, %%rsi\n\t"
        "setne %%al\n\t"
        "movzbq %%al, %%rax\n\t"
        "add %%rax, %[changed]\n\t"
        "mov $0x4444444444444444, %%rax\n\t"
        "cmp %%rax, %%rdi\n\t"
        "setne %%al\n\t"
        "movzbq %%al, %%rax\n\t"
        "add %%rax, %[changed]\n\t"
        "mov $0x5555555555555555, %%rax\n\t"
        "cmp %%rax, %%r8\n\t"
        "setne %%al\n\t"
        "movzbq %%al, %%rax\n\t"
        "add %%rax, %[changed]\n\t"
        "mov $0x6666666666666666, %%rax\n\t"
        "cmp %%rax, %%r9\n\t"
        "setne %%al\n\t"
        "movzbq %%al, %%rax\n\t"
        "add %%rax, %[changed]\n\t"
        "mov $0x7777777777777777, %%rax\n\t"
        "cmp %%rax, %%r10\n\t"
        "setne %%al\n\t"
        "movzbq %%al, %%rax\n\t"
        "add %%rax, %[changed]\n\t"
        "mov $0x0bbbbbbbbbbbbbbb, %%rax\n\t"
        "cmp %%rax, %%r11\n\t"
        "setne %%al\n\t"
        "movzbq %%al, %%rax\n\t"
        "add %%rax, %[changed]\n\t"
        "movq %%xmm0, %%rax\n\t"
        "cmp %%rax, %%rcx\n\t"
        "setne %%al\n\t"
        "movzbq %%al, %%rax\n\t"
        "add %%rax, %[changed]\n\t"
        "movq %%xmm15, %%rax\n\t"
        "cmp %%rax, %%rdx\n\t"
        "setne %%al\n\t"
        "movzbq %%al, %%rax\n\t"
        "add %%rax, %[changed]\n\t"
        : [changed] "=&b"(changed)
        : [flag] "r"(flag), [want] "r"(want)
        : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "xmm0", "xmm15", "cc", "memory");
    return changed;
}

static void *worker(void *arg) {
    int me = (int)(long)arg;
    for (int r = 0; r < rounds; r++) {
        if (use_registers)
            broken[me] += wait_with_sentinels(&turn, me);
        else if (use_short)
            wait_short(&turn, me);
        else if (use_patch) {
            static volatile int go[MAX_THREADS * 16];
            if (r == 0 && me == 0)
                go[0] = MAGIC;
            wait_magic(&go[me * 16]);
            go[me * 16] = 0;
            counts[me]++;
            go[((me + 1) % nthreads) * 16] = MAGIC;
            continue;
        } else
            while (turn != me)
                ;
        counts[me]++;
        __atomic_store_n(&turn, (me + 1) % nthreads, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

int main(int argc, char **argv) {
    use_registers = argc > 1 && strcmp(argv[1], "registers") == 0;
    use_short = argc > 1 && strcmp(argv[1], "short") == 0;
    use_patch = argc > 1 && strcmp(argv[1], "patch") == 0;
    nthreads = argc > 2 ? atoi(argv[2]) : 4;
    rounds = argc > 3 ? atoi(argv[3]) : 1000;
    if (nthreads < 1 || nthreads > MAX_THREADS || rounds < 1) {
        fprintf(stderr, "usage: spin_token_ring [global|registers|short|patch] [threads 1-16] [rounds]\n");
        return 2;
    }
    pthread_t t[MAX_THREADS];
    for (int i = 0; i < nthreads; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(long)i) != 0) {
            perror("pthread_create");
            return 1;
        }
    long changed = 0;
    for (int i = 0; i < nthreads; i++) {
        pthread_join(t[i], NULL);
        changed += broken[i];
    }
    for (int i = 0; i < nthreads; i++)
        printf("thread %d: %ld turns\n", i, counts[i]);
    printf("registers changed across waits: %ld\n", changed);
    printf("token at %d\n", turn);
    if (use_patch) {
        printf("patched %d immediate(s)\n", patch_wait_magic());
        pthread_t w;
        pthread_create(&w, NULL, gate_waiter, NULL);
        gate[0] = MAGIC; /* the old value: must not let the waiter pass any more */
        usleep(100000);
        printf("after the old value: passed %d\n", passed);
        int early = passed;
        gate[0] = PATCHED;
        pthread_join(w, NULL);
        printf("after the new value: passed %d\n", passed);
        return early != 0;
    }
    return changed != 0;
}
