// Thread stacks whose top 2 MiB the host backs with 4 KiB pages (nr::SMALL_HOST_PAGES, asked
// for each MAP_STACK mapping that ends a 2 MiB page): 40 threads with glibc's default 8 MiB
// stacks each go 3 MiB deep, across the small-page top into the huge-page rest, writing and
// reading back what they wrote; twice, so the second team gets stacks glibc cached or freshly
// mapped ones over memory the first team's unmapped stacks gave back. Then memory mapped over
// what those stacks gave back must read zero. Output is the same natively.
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define THREADS 40
#define FRAME 4096
#define DEPTH 768 /* 3 MiB of frames */

static uint64_t dive(int level, uint64_t seed) {
    volatile unsigned char frame[FRAME];
    for (int i = 0; i < FRAME; i += 64) frame[i] = (unsigned char)(seed * 13 + level + i);
    uint64_t below = level + 1 < DEPTH ? dive(level + 1, seed) : 0;
    uint64_t sum = 0;
    for (int i = 0; i < FRAME; i += 64) sum += (uint64_t)frame[i] * (level + 1);
    return sum + below;
}

static void *worker(void *arg) {
    uint64_t seed = (uint64_t)(uintptr_t)arg;
    return (void *)(uintptr_t)dive(0, seed);
}

static uint64_t team(int round) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i * 7 + round))) {
            printf("pthread_create failed\n");
            return 0;
        }
    uint64_t total = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        total += (uint64_t)(uintptr_t)r;
    }
    return total;
}

int main(void) {
    for (int round = 0; round < 2; round++) printf("team %d: %llu\n", round, (unsigned long long)team(round));
    size_t len = 256u << 20;
    unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        printf("mmap failed\n");
        return 1;
    }
    size_t nonzero = 0;
    for (size_t i = 0; i < len; i += 512) nonzero += p[i] != 0;
    memset(p, 0xa5, len);
    printf("fresh memory: %zu nonzero samples\n", nonzero);
    munmap(p, len);
    printf("stack tops: done\n");
    return 0;
}
