/* futex_waitv (Linux 5.16): its argument checks (flags, counts, clocks, entry flags, reserved
 * fields, values wider than 32 bits, unaligned and unmapped words, unreadable arrays and
 * timeouts), a word that no longer holds its value (EAGAIN), absolute timeouts on both clocks
 * (ETIMEDOUT), the index of the word another thread wakes (first, middle and last of up to
 * 128), and a signal without SA_RESTART (EINTR). One line per case, the same natively and under
 * hrt.
 * Usage: futex_waitv */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef FUTEX_32
#define FUTEX_32 2
#endif

static uint32_t words[128];
static struct futex_waitv wv[128];

static long waitv(struct futex_waitv *v, unsigned n, unsigned flags, struct timespec *to, int clock) {
    return syscall(SYS_futex_waitv, v, n, flags, to, clock);
}

static const char *res(long r) {
    static char buf[4][32];
    static int i;
    char *b = buf[i++ % 4];
    if (r < 0)
        snprintf(b, 32, "errno %d", errno);
    else
        snprintf(b, 32, "index %ld", r);
    return b;
}

static void fill(unsigned n) {
    memset(wv, 0, sizeof wv);
    for (unsigned i = 0; i < n; i++) {
        words[i] = 0;
        wv[i].uaddr = (uintptr_t)&words[i];
        wv[i].flags = FUTEX_32 | FUTEX_PRIVATE_FLAG;
        wv[i].val = 0;
    }
}

static struct timespec in(int clock, long ms) {
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (ms % 1000) * 1000000;
    if (t.tv_nsec >= 1000000000)
        t.tv_sec++, t.tv_nsec -= 1000000000;
    return t;
}

static void checks(void) {
    struct timespec t = in(CLOCK_MONOTONIC, 5000);
    fill(4);
    printf("flags 1: %s\n", res(waitv(wv, 4, 1, &t, CLOCK_MONOTONIC)));
    printf("0 words: %s\n", res(waitv(wv, 0, 0, &t, CLOCK_MONOTONIC)));
    printf("129 words: %s\n", res(waitv(wv, 129, 0, &t, CLOCK_MONOTONIC)));
    printf("NULL array: %s\n", res(waitv(NULL, 1, 0, &t, CLOCK_MONOTONIC)));
    printf("CLOCK_TAI: %s\n", res(waitv(wv, 4, 0, &t, CLOCK_TAI)));
    printf("array at 16: %s\n", res(waitv((void *)16, 1, 0, &t, CLOCK_MONOTONIC)));
    printf("timeout at 16: %s\n", res(waitv(wv, 4, 0, (void *)16, CLOCK_MONOTONIC)));
    wv[1].flags = FUTEX_PRIVATE_FLAG;
    printf("entry without a size: %s\n", res(waitv(wv, 4, 0, &t, CLOCK_MONOTONIC)));
    fill(4);
    wv[2].flags |= 0x1000;
    printf("unknown entry flag: %s\n", res(waitv(wv, 4, 0, &t, CLOCK_MONOTONIC)));
    fill(4);
    wv[3].__reserved = 1;
    printf("reserved set: %s\n", res(waitv(wv, 4, 0, &t, CLOCK_MONOTONIC)));
    fill(4);
    wv[0].val = 1ull << 32;
    printf("value over 32 bits: %s\n", res(waitv(wv, 4, 0, &t, CLOCK_MONOTONIC)));
    fill(4);
    wv[1].uaddr += 2;
    printf("unaligned word: %s\n", res(waitv(wv, 4, 0, &t, CLOCK_MONOTONIC)));
    fill(4);
    void *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(gone, 4096);
    wv[2].uaddr = (uintptr_t)gone;
    printf("unmapped word: %s\n", res(waitv(wv, 4, 0, &t, CLOCK_MONOTONIC)));
    fill(4);
    words[2] = 7;
    printf("third word changed: %s\n", res(waitv(wv, 4, 0, &t, CLOCK_MONOTONIC)));
    fill(4);
    struct timespec past = in(CLOCK_MONOTONIC, 0);
    past.tv_sec -= 1;
    printf("monotonic deadline passed: %s\n", res(waitv(wv, 4, 0, &past, CLOCK_MONOTONIC)));
    struct timespec soon = in(CLOCK_REALTIME, 20);
    printf("realtime deadline in 20 ms: %s\n", res(waitv(wv, 4, 0, &soon, CLOCK_REALTIME)));
    struct timespec bad = {0, 2000000000};
    printf("2e9 ns: %s\n", res(waitv(wv, 4, 0, &bad, CLOCK_MONOTONIC)));
}

static atomic_int done;

/* Wakes word `k` until it has woken someone. */
static void *waker(void *arg) {
    uint32_t *w = arg;
    while (syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0) < 1)
        usleep(1000);
    return NULL;
}

static void woken(unsigned n, unsigned k) {
    fill(n);
    pthread_t t;
    pthread_create(&t, NULL, waker, &words[k]);
    struct timespec to = in(CLOCK_MONOTONIC, 20000);
    printf("%u words, word %u woken: %s\n", n, k, res(waitv(wv, n, 0, &to, CLOCK_MONOTONIC)));
    pthread_join(t, NULL);
}

static void on_usr1(int s) { (void)s; }

static void *signaller(void *arg) {
    pthread_t main_thread = *(pthread_t *)arg;
    while (!atomic_load(&done)) {
        pthread_kill(main_thread, SIGUSR1);
        usleep(2000);
    }
    return NULL;
}

static void interrupted(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    fill(3);
    pthread_t self = pthread_self(), t;
    pthread_create(&t, NULL, signaller, &self);
    long r = waitv(wv, 3, 0, NULL, 0);
    const char *what = res(r);
    atomic_store(&done, 1);
    pthread_join(t, NULL);
    printf("a signal without SA_RESTART, no timeout: %s\n", what);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    checks();
    woken(1, 0);
    woken(5, 0);
    woken(5, 2);
    woken(128, 127);
    interrupted();
    printf("futex_waitv: done\n");
    return 0;
}
