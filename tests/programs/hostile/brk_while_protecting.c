// The break moves while another thread changes protections: on one vCPU the two threads take
// turns, so the protection changer is often preempted in the middle of a page-table change.
// The kernel's brk holds its lock with interrupts masked while it makes the pages above the
// break present or not; with a plain spinlock around the protection changes, a brk arriving
// while a preempted thread held that lock spun on it for good (the only vCPU stuck, SIGTERM
// not acted on). Prints one line once both threads have done their work.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

enum { BREAK_MOVES = 3000, STEP = 3 << 20, MAPPING = 64 << 20 };

static volatile int stop;

// Every page but the first and last of a 64 MiB mapping read-only, then writable again: the
// 2 MiB leaves split into 4 KiB ones, a long page-table change each time.
static void *protector(void *arg) {
    (void)arg;
    char *p = mmap(0, MAPPING, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return (void *)0;
    }
    long rounds = 0;
    while (!stop || rounds == 0) {
        mprotect(p + 4096, MAPPING - 8192, PROT_READ);
        mprotect(p + 4096, MAPPING - 8192, PROT_READ | PROT_WRITE);
        p[4096] = 1;
        rounds++;
    }
    munmap(p, MAPPING);
    return (void *)rounds;
}

int main(void) {
    pthread_t t;
    if (pthread_create(&t, 0, protector, 0) != 0) {
        perror("pthread_create");
        return 1;
    }
    long moves = 0;
    for (int i = 0; i < BREAK_MOVES; i++) {
        if (sbrk(STEP) == (void *)-1 || sbrk(-STEP) == (void *)-1) {
            perror("sbrk");
            break;
        }
        moves++;
    }
    stop = 1;
    void *rounds;
    pthread_join(t, &rounds);
    printf("break moves: %ld, protection rounds done: %s\n", moves, (long)rounds > 0 ? "yes" : "no");
    return moves == BREAK_MOVES && (long)rounds > 0 ? 0 : 1;
}
