// futex(2)'s argument checks in the order Linux makes them, single-threaded so every answer
// is deterministic: the realtime clock flag on a wake (ENOSYS, also for the private wake
// the kernel serves on its fast path), requeue targets that are only keys (an unmapped one is
// no error, as for a private wake), a PI trylock of a word owned by a thread id no thread has
// (ESRCH), WAKE_OP's operations and comparisons, timeouts and word mismatches.
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long fx(void *a, int op, long v, const void *t, void *a2, long v3) {
    errno = 0;
    long r = syscall(SYS_futex, a, op, v, t, a2, v3);
    return r < 0 ? -errno : r;
}

static uint32_t w1, w2;

int main(void) {
    struct timespec zero = {0, 0}, neg = {-1, 0}, bad_ns = {0, 1000000000};
    void *unmapped = mmap(0, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(unmapped, 4096);

    printf("wake_bitset realtime private %ld\n", fx(&w1, FUTEX_WAKE_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, 1, 0, 0, 0));
    printf("wake realtime private %ld\n", fx(&w1, FUTEX_WAKE_PRIVATE | FUTEX_CLOCK_REALTIME, 1, 0, 0, 0));
    printf("wake_bitset realtime shared %ld\n", fx(&w1, FUTEX_WAKE_BITSET | FUTEX_CLOCK_REALTIME, 1, 0, 0, ~0));
    printf("wait realtime %ld\n", fx(&w1, FUTEX_WAIT_PRIVATE | FUTEX_CLOCK_REALTIME, 0, &zero, 0, 0));
    printf("wake_bitset zero bits %ld\n", fx(&w1, FUTEX_WAKE_BITSET_PRIVATE, 1, 0, 0, 0));
    printf("wait_bitset zero bits %ld\n", fx(&w1, FUTEX_WAIT_BITSET_PRIVATE, 0, &zero, 0, 0));

    w1 = 3;
    printf("requeue to unmapped %ld\n", fx(&w1, FUTEX_REQUEUE_PRIVATE, 1, (void *)1, unmapped, 0));
    printf("cmp_requeue to unmapped %ld\n", fx(&w1, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)1, unmapped, 3));
    printf("requeue from unmapped %ld\n", fx(unmapped, FUTEX_REQUEUE_PRIVATE, 1, (void *)1, &w2, 0));
    printf("cmp_requeue from unmapped %ld\n", fx(unmapped, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)1, &w2, 0));
    printf("cmp_requeue mismatch %ld\n", fx(&w1, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)1, &w2, 4));
    printf("cmp_requeue unaligned target %ld\n", fx(&w1, FUTEX_CMP_REQUEUE_PRIVATE, 1, (void *)1, (char *)&w2 + 1, 3));
    printf("requeue negative wake %ld\n", fx(&w1, FUTEX_REQUEUE_PRIVATE, -1, (void *)1, &w2, 0));
    printf("requeue negative move %ld\n", fx(&w1, FUTEX_REQUEUE_PRIVATE, 1, (void *)(long)-1, &w2, 0));
    printf("wake unmapped %ld\n", fx(unmapped, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0));
    printf("wake unaligned %ld\n", fx((char *)&w1 + 2, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0));

    printf("wait now %ld\n", fx(&w1, FUTEX_WAIT_PRIVATE, 3, &zero, 0, 0));
    printf("wait mismatch %ld\n", fx(&w1, FUTEX_WAIT_PRIVATE, 4, &zero, 0, 0));
    printf("wait negative time %ld\n", fx(&w1, FUTEX_WAIT_PRIVATE, 3, &neg, 0, 0));
    printf("wait bad nanoseconds %ld\n", fx(&w1, FUTEX_WAIT_PRIVATE, 3, &bad_ns, 0, 0));
    printf("wait unmapped %ld\n", fx(unmapped, FUTEX_WAIT_PRIVATE, 0, &zero, 0, 0));

    uint32_t pi = 999999;
    long r;
    r = fx(&pi, FUTEX_TRYLOCK_PI_PRIVATE, 0, 0, 0, 0);
    printf("trylock_pi no such owner %ld word %#x\n", r, pi);
    pi = 999999 | FUTEX_OWNER_DIED;
    printf("trylock_pi died owner %ld\n", fx(&pi, FUTEX_TRYLOCK_PI_PRIVATE, 0, 0, 0, 0));
    pi = FUTEX_OWNER_DIED;
    r = fx(&pi, FUTEX_TRYLOCK_PI_PRIVATE, 0, 0, 0, 0);
    printf("trylock_pi died, no owner %ld mine %d died kept %d\n", r, (pi & FUTEX_TID_MASK) == (uint32_t)syscall(SYS_gettid),
           !!(pi & FUTEX_OWNER_DIED));
    printf("trylock_pi own %ld\n", fx(&pi, FUTEX_TRYLOCK_PI_PRIVATE, 0, 0, 0, 0));
    r = fx(&pi, FUTEX_UNLOCK_PI_PRIVATE, 0, 0, 0, 0);
    printf("unlock_pi own %ld word %#x\n", r, pi);
    printf("unlock_pi free %ld\n", fx(&pi, FUTEX_UNLOCK_PI_PRIVATE, 0, 0, 0, 0));

    for (int op = 0; op < 6; op++)
        for (int cmp = 0; cmp < 7; cmp++)
            for (int shift = 0; shift < 2; shift++) {
                w2 = 0x10;
                int oparg = shift ? 3 : 0xfff;
                uint32_t enc = ((uint32_t)(op | (shift ? 8 : 0)) << 28) | (cmp << 24) | ((oparg & 0xfff) << 12) | 0x10;
                r = fx(&w1, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1, &w2, enc);
                printf("wake_op op %d cmp %d shift %d: %ld word %#x\n", op, cmp, shift, r, w2);
            }
    printf("wake_op unmapped second %ld\n", fx(&w1, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1, unmapped, 0));
    printf("futex argument checks: done\n");
    return 0;
}
