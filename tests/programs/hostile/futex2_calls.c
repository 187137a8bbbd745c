/* The futex2 calls (Linux 6.7: futex_wake, futex_wait, futex_requeue), which hrt answered
 * ENOSYS: waits and wake-ups with masks between threads and between processes (memory shared
 * at a fork), futex_wake of 0 waking none (futex2 is strict), a requeue, and the argument
 * checks (the futex's size, unknown flags, a value or mask past 32 bits, the clock). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NR_WAKE 454
#define NR_WAIT 455
#define NR_REQUEUE 456
#define U32 2
#define PRIV 128

struct waitv {
    uint64_t val, uaddr;
    uint32_t flags, reserved;
};

static long wake2(uint32_t *w, unsigned long mask, int nr, unsigned flags) {
    return syscall(NR_WAKE, w, mask, nr, flags);
}
static long wait2(uint32_t *w, unsigned long val, unsigned long mask, unsigned flags, struct timespec *t, int clock) {
    return syscall(NR_WAIT, w, val, mask, flags, t, clock);
}
static void show(const char *what, long r) {
    printf("%s: %ld%s%s\n", what, r, r < 0 ? " " : "", r < 0 ? strerror(errno) : "");
}
/* How many wait on private word `w` (a classic requeue onto itself that wakes none). */
static long waiting(uint32_t *w, int shared) {
    return syscall(SYS_futex, w, shared ? 4 : 4 | 128, 0, (void *)1000, w, *w);
}
static void until(uint32_t *w, long n, int shared) {
    for (int i = 0; i < 20000 && waiting(w, shared) != n; i++)
        usleep(500);
}

static uint32_t A, B;
static long got[2];
static void *waiter(void *x) {
    long i = (long)x;
    got[i] = wait2(&A, 0, i ? 2 : 1, U32 | PRIV, NULL, 0);
    return 0;
}

int main(void) {
    struct timespec past = {0, 0};
    errno = 0;
    show("futex_wait, the value changed", wait2(&A, 1, ~0u, U32 | PRIV, NULL, 0));
    show("futex_wait, a monotonic deadline passed", wait2(&A, 0, ~0u, U32 | PRIV, &past, CLOCK_MONOTONIC));
    show("futex_wait, a realtime deadline passed", wait2(&A, 0, ~0u, U32 | PRIV, &past, CLOCK_REALTIME));
    show("futex_wait, clock 5", wait2(&A, 0, ~0u, U32 | PRIV, &past, 5));
    show("futex_wait, a 64-bit value", wait2(&A, 1ul << 32, ~0u, U32 | PRIV, NULL, 0));
    show("futex_wake, an 8-bit futex", wake2(&A, ~0u, 1, 0 | PRIV));
    show("futex_wake, unknown flags", wake2(&A, ~0u, 1, U32 | 0x100));
    show("futex_wake, mask 0", wake2(&A, 0, 1, U32 | PRIV));
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], 0, waiter, (void *)i);
    until(&A, 2, 0);
    show("futex_wake of 0", wake2(&A, ~0u, 0, U32 | PRIV));
    show("futex_wake, mask 2 (the second waiter's)", wake2(&A, 2, 5, U32 | PRIV));
    pthread_join(t[1], 0);
    struct waitv rq[2] = {{0, (uintptr_t)&A, U32 | PRIV, 0}, {0, (uintptr_t)&B, U32 | PRIV, 0}};
    show("futex_requeue of the other to B", syscall(NR_REQUEUE, rq, 0, 0, 1));
    show("futex_wake of B", wake2(&B, ~0u, 1, U32 | PRIV));
    pthread_join(t[0], 0);
    printf("the waiters answered %ld and %ld\n", got[0], got[1]);
    uint32_t *s = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0)
        _exit(wait2(s, 0, 4, U32, NULL, 0) == 0 ? 0 : 1);
    until(s, 1, 1);
    show("a waiter in another process: futex_wake, mask 1", wake2(s, 1, 1, U32));
    show("a waiter in another process: futex_wake, mask 4", wake2(s, 4, 1, U32));
    int st;
    waitpid(c, &st, 0);
    printf("it woke with 0: %d\n", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    return 0;
}
