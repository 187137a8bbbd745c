/* Futex calls at their edges, as Linux answers them (hrt differed in each): FUTEX_WAKE and
 * FUTEX_WAKE_OP with a count of 0 wake one; FUTEX_OP_OPARG_SHIFT takes the shift modulo 32
 * (hrt wrote 0 past 31); a requeue onto the same futex keeps the waiters' order (hrt moved them
 * behind); futex_waitv answers the last of its words a wake-up reached (hrt: the first) and
 * a value mismatch before a later unmapped word is EAGAIN (hrt: EFAULT); FUTEX_WAKE_BITSET
 * reaches only the matching waiters in another process too (hrt woke any); a shared futex on
 * a read-only page of private anonymous memory is EFAULT (Linux finds it no key; hrt waited),
 * one on a read-only page of the program's file (its text) is not. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long fx(void *u, int op, unsigned v, void *t, void *u2, unsigned v3) {
    return syscall(SYS_futex, u, op, v, t, u2, v3);
}

/* How many wait on `w` (a requeue of it onto itself that wakes none counts them). */
static long waiters(uint32_t *w, int shared) {
    return fx(w, shared ? FUTEX_CMP_REQUEUE : FUTEX_CMP_REQUEUE_PRIVATE, 0, (void *)1000, w, *w);
}

static void until_waiting(uint32_t *w, long n, int shared) {
    for (int i = 0; i < 20000 && waiters(w, shared) != n; i++)
        usleep(500);
}

static uint32_t A, B;
static volatile int woke[3];

static void *wait_a(void *x) {
    fx(&A, FUTEX_WAIT_PRIVATE, 0, 0, 0, 0);
    woke[(long)x] = 1;
    return 0;
}

static void wake_zero(void) {
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], 0, wait_a, (void *)i);
    until_waiting(&A, 2, 0);
    long r1 = fx(&A, FUTEX_WAKE_PRIVATE, 0, 0, 0, 0);
    until_waiting(&A, 1, 0);
    long r2 = fx(&A, FUTEX_WAKE_OP_PRIVATE, 0, 0, &B, FUTEX_OP(FUTEX_OP_SET, 0, FUTEX_OP_CMP_EQ, 0));
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], 0);
    printf("FUTEX_WAKE of 0 woke %ld, FUTEX_WAKE_OP of 0 woke %ld\n", r1, r2);
    woke[0] = woke[1] = 0;
}

static void oparg_shift(void) {
    static uint32_t a, b;
    int args[] = {31, 32, 40, -1};
    printf("FUTEX_OP_OPARG_SHIFT:");
    for (int i = 0; i < 4; i++) {
        b = 0;
        fx(&a, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1, &b,
           FUTEX_OP(FUTEX_OP_SET | FUTEX_OP_OPARG_SHIFT, args[i] & 0xfff, FUTEX_OP_CMP_EQ, 0));
        printf(" %d -> %#x", args[i], b);
    }
    printf("\n");
}

static void requeue_self(void) {
    pthread_t t[3];
    for (long i = 0; i < 3; i++) {
        pthread_create(&t[i], 0, wait_a, (void *)i);
        until_waiting(&A, i + 1, 0);
    }
    long moved = fx(&A, FUTEX_CMP_REQUEUE_PRIVATE, 0, (void *)1, &A, 0);
    fx(&A, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0);
    while (!woke[0] && !woke[1] && !woke[2])
        usleep(1000);
    int first = woke[0] ? 0 : woke[1] ? 1 : 2;
    fx(&A, FUTEX_WAKE_PRIVATE, 10, 0, 0, 0);
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], 0);
    printf("requeue onto itself: %ld counted, the first woken then waited first: %d\n", moved, first == 0);
}

static long waitv_result;
static void *wait_both(void *x) {
    (void)x;
    struct futex_waitv v[2] = {{0, (uintptr_t)&A, FUTEX_32 | FUTEX_PRIVATE_FLAG, 0},
                               {0, (uintptr_t)&B, FUTEX_32 | FUTEX_PRIVATE_FLAG, 0}};
    waitv_result = syscall(SYS_futex_waitv, v, 2, 0, NULL, 0);
    return 0;
}

static void waitv(void) {
    A = B = 0;
    pthread_t t;
    pthread_create(&t, 0, wait_both, 0);
    until_waiting(&B, 1, 0);
    long r = fx(&A, FUTEX_WAKE_OP_PRIVATE, 1, (void *)1, &B, FUTEX_OP(FUTEX_OP_ADD, 0, FUTEX_OP_CMP_EQ, 0));
    pthread_join(t, 0);
    printf("futex_waitv woken through both words (%ld wake-ups): index %ld\n", r, waitv_result);
    void *gone = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(gone, 4096);
    struct futex_waitv v[2] = {{5, (uintptr_t)&A, FUTEX_32 | FUTEX_PRIVATE_FLAG, 0},
                               {0, (uintptr_t)gone, FUTEX_32 | FUTEX_PRIVATE_FLAG, 0}};
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    errno = 0;
    long e = syscall(SYS_futex_waitv, v, 2, 0, &now, CLOCK_MONOTONIC);
    printf("futex_waitv [mismatch, unmapped]: %ld (%s)\n", e, strerror(errno));
}

static void bitset_across_fork(void) {
    uint32_t *f = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    fflush(stdout);
    pid_t p = fork();
    if (p == 0) {
        fx(f, FUTEX_WAIT_BITSET, 0, 0, 0, 4);
        _exit(0);
    }
    until_waiting(f, 1, 1);
    long other = fx(f, FUTEX_WAKE_BITSET, 1, 0, 0, 1);
    long matching = fx(f, FUTEX_WAKE_BITSET, 1, 0, 0, 4);
    waitpid(p, 0, 0);
    printf("a waiter in another process with bitset 4: woken by bitset 1 %ld, by bitset 4 %ld\n", other, matching);
}

static void read_only_pages(void) {
    struct timespec soon = {0, 1000000};
    void *ro = mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    errno = 0;
    long r = fx(ro, FUTEX_WAIT, 0, &soon, 0, 0);
    printf("shared FUTEX_WAIT on a read-only anonymous page: %ld (%s)", r, strerror(errno));
    errno = 0;
    r = fx(ro, FUTEX_WAKE, 1, 0, 0, 0);
    printf(", FUTEX_WAKE %ld (%s)\n", r, strerror(errno));
    errno = 0;
    r = fx((void *)((uintptr_t)wake_zero & ~(uintptr_t)3), FUTEX_WAKE, 1, 0, 0, 0);
    printf("shared FUTEX_WAKE on the program's text: %ld (%s)\n", r, strerror(errno));
}

int main(void) {
    read_only_pages();
    wake_zero();
    oparg_shift();
    requeue_self();
    waitv();
    bitset_across_fork();
    return 0;
}
