// Memory far into the program's pool: hrt gives the pool to KVM in growing pieces as the
// kernel first makes them present (monitor/src/vm/pool_slots.rs), so this reaches pieces that
// exist only once asked for: a 6 GiB mapping (across the hole below 4 GiB in the guest), a
// fixed mapping at 12 GiB, thread stacks made while the pool grows, a child forked early (its
// VM starts with what the parent's had) that maps more and reads the parent's, and mremap
// growth. Every byte read must be zero before it is written and keep what was written; the
// output must match a native run.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define STEP (64UL << 20)

/// Touches one byte per STEP of `[m, m + len)`: reads zero first, then writes and checks.
static long touch(char *m, size_t len, char tag) {
    long bad = 0;
    for (size_t off = 0; off < len; off += STEP) {
        bad += m[off] != 0;
        m[off] = tag;
    }
    for (size_t off = 0; off < len; off += STEP) {
        bad += m[off] != tag;
    }
    return bad;
}

static void *worker(void *arg) {
    char local[4096];
    memset(local, (int)(long)arg, sizeof local);
    char *m = mmap(NULL, 256UL << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        return (void *)-1L;
    }
    long bad = touch(m, 256UL << 20, (char)(long)arg) + (local[100] != (char)(long)arg);
    munmap(m, 256UL << 20);
    return (void *)bad;
}

int main(void) {
    // A child forked early, while the parent has used little of its pool: the child's VM
    // starts with what the parent's had and grows on its own.
    char *early = mmap(NULL, 128UL << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (early == MAP_FAILED || touch(early, 128UL << 20, 4) != 0) {
        return 1;
    }
    pid_t child = fork();
    if (child == 0) {
        char *more = mmap(NULL, 2UL << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        long wrong = more == MAP_FAILED ? 1000 : touch(more, 2UL << 30, 3);
        for (size_t off = 0; off < (128UL << 20); off += STEP) {
            wrong += early[off] != 4;
        }
        _exit(wrong > 100 ? 100 : (int)wrong);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("forked child mapping 2 GiB more: exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);

    size_t big = 6UL << 30;
    char *m = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        perror("mmap 6 GiB");
        return 1;
    }
    printf("6 GiB mapping: %ld bad\n", touch(m, big, 7));

    pthread_t threads[8];
    for (long i = 0; i < 8; i++) {
        pthread_create(&threads[i], NULL, worker, (void *)(i + 1));
    }
    long bad = 0;
    for (int i = 0; i < 8; i++) {
        void *r;
        pthread_join(threads[i], &r);
        bad += (long)r;
    }
    printf("8 threads with 256 MiB each: %ld bad\n", bad);

    char *fixed = mmap((void *)(12UL << 30), 64UL << 20, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (fixed == MAP_FAILED) {
        perror("mmap at 12 GiB");
        return 1;
    }
    printf("fixed mapping at 12 GiB: %ld bad\n", touch(fixed, 64UL << 20, 9));

    char *grown = mremap(m, big, big + (1UL << 30), MREMAP_MAYMOVE);
    if (grown == MAP_FAILED) {
        perror("mremap");
        return 1;
    }
    long kept = 0;
    for (size_t off = 0; off < big; off += STEP) {
        kept += grown[off] == 7;
    }
    printf("mremap to 7 GiB: %ld of %lu kept, new part %ld bad\n", kept, big / STEP,
           touch(grown + big, 1UL << 30, 5));
    return 0;
}
