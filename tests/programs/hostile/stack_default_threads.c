// N threads (argv[1], default 1,000) made with pthread_create's default attributes (8 MiB
// stacks), alive at once: each touches 64 KiB of its stack, waits at a barrier until all exist,
// and returns a checksum of what it wrote; then all are joined. What OpenMP runtimes do for
// OMP_NUM_THREADS=1000. stdout has counts only.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TOUCH = 64 << 10 };
static pthread_barrier_t barrier;

static void *work(void *arg) {
    volatile unsigned char buf[TOUCH];
    long id = (long)arg;
    for (long i = 0; i < TOUCH; i += 512) buf[i] = (unsigned char)(id + i / 512);
    pthread_barrier_wait(&barrier);
    long sum = 0;
    for (long i = 0; i < TOUCH; i += 512) sum += buf[i];
    return (void *)sum;
}

static long expected(long id) {
    long sum = 0;
    for (long i = 0; i < TOUCH; i += 512) sum += (unsigned char)(id + i / 512);
    return sum;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000;
    if (n < 1 || n > 100000) return 2;
    pthread_t *t = calloc(n, sizeof *t);
    pthread_barrier_init(&barrier, NULL, n + 1);
    for (long i = 0; i < n; i++) {
        int e = pthread_create(&t[i], NULL, work, (void *)i);
        if (e) {
            printf("create %ld of %ld: %s\n", i, n, strerror(e));
            return 1;
        }
    }
    pthread_barrier_wait(&barrier);
    long wrong = 0;
    for (long i = 0; i < n; i++) {
        void *r;
        int e = pthread_join(t[i], &r);
        if (e) {
            printf("join %ld: %s\n", i, strerror(e));
            return 1;
        }
        wrong += (long)r != expected(i);
    }
    printf("%ld threads with default stacks alive at once, %d KiB of each stack touched, joined: %ld wrong\n", n,
           TOUCH >> 10, wrong);
    return wrong != 0;
}
