// Threads at scale. `batches`: 10,000 threads with 64 KiB stacks, created and joined 100 at a
// time. `live [N]`: N (default 2,000) threads with 64 KiB stacks alive at once (each waits at a
// barrier until all exist), then joined. `default`: threads with the default (8 MiB) stacks, alive at once, until
// pthread_create refuses (EAGAIN) or 10,000 exist; then all are joined and one more is made.
// stdout has counts only; the time taken goes to stderr.
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_barrier_t barrier;
static int use_barrier;

static void *work(void *arg) {
    if (use_barrier) pthread_barrier_wait(&barrier);
    return (void *)((long)arg * 2);
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static long join_all(pthread_t *t, long n, long first) {
    long sum = 0;
    for (long i = 0; i < n; i++) {
        void *r;
        int e = pthread_join(t[i], &r);
        if (e) {
            printf("join %ld: %s\n", first + i, strerror(e));
            exit(1);
        }
        sum += (long)r;
    }
    return sum;
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    pthread_attr_t small;
    pthread_attr_init(&small);
    pthread_attr_setstacksize(&small, 64 << 10);
    double t0 = now();
    if (!strcmp(c, "batches")) {
        enum { TOTAL = 10000, BATCH = 100 };
        pthread_t t[BATCH];
        long created = 0, sum = 0;
        for (long b = 0; b < TOTAL; b += BATCH) {
            for (long i = 0; i < BATCH; i++) {
                int e = pthread_create(&t[i], &small, work, (void *)(b + i));
                if (e) {
                    printf("create %ld: %s\n", b + i, strerror(e));
                    return 1;
                }
                created++;
            }
            sum += join_all(t, BATCH, b);
        }
        printf("batches: %ld threads created and joined, sum %s\n", created,
               sum == (long)TOTAL * (TOTAL - 1) ? "right" : "wrong");
    } else if (!strcmp(c, "live")) {
        long LIVE = argc > 2 ? atol(argv[2]) : 2000;
        if (LIVE < 1 || LIVE > 100000) return 2;
        pthread_t *t = calloc(LIVE, sizeof *t);
        use_barrier = 1;
        pthread_barrier_init(&barrier, NULL, LIVE + 1);
        for (long i = 0; i < LIVE; i++) {
            int e = pthread_create(&t[i], &small, work, (void *)i);
            if (e) {
                printf("create %ld: %s\n", i, strerror(e));
                return 1;
            }
        }
        pthread_barrier_wait(&barrier);
        double t1 = now();
        long sum = join_all(t, LIVE, 0);
        fprintf(stderr, "live: created in %.3f s, joined in %.3f s\n", t1 - t0, now() - t1);
        printf("live: %ld threads alive at once, joined, sum %s\n", LIVE,
               sum == (long)LIVE * (LIVE - 1) ? "right" : "wrong");
    } else if (!strcmp(c, "default")) {
        enum { MAX = 10000 };
        static pthread_t t[MAX];
        use_barrier = 0;
        long n = 0;
        int e = 0;
        // Threads that block until released, so all of them are alive together.
        static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
        pthread_mutex_lock(&gate);
        void *wait_gate(void *arg) {
            pthread_mutex_lock(&gate);
            pthread_mutex_unlock(&gate);
            return arg;
        }
        while (n < MAX && (e = pthread_create(&t[n], NULL, wait_gate, NULL)) == 0) n++;
        pthread_mutex_unlock(&gate);
        join_all(t, n, 0);
        pthread_t extra;
        int again = pthread_create(&extra, NULL, wait_gate, NULL);
        if (!again) pthread_join(extra, NULL);
        printf("default: %ld threads with 8 MiB stacks (then %s); after joining them, one more: %s\n", n,
               n == MAX ? "stopped" : strerror(e), again ? strerror(again) : "ok");
        fprintf(stderr, "default: %ld threads\n", n);
    } else {
        fprintf(stderr, "usage: %s batches|live [N]|default\n", argv[0]);
        return 2;
    }
    fprintf(stderr, "%s: %.3f s\n", c, now() - t0);
    return 0;
}
