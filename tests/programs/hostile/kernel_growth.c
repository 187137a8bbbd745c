// More kernel memory than the first piece of the kernel's share: hrt registers the share with
// KVM in growing pieces, downward from its top, as the kernel's allocator runs out
// (monitor/src/vm/pool_slots.rs, kernel/src/mem/mod.rs `grow`). Each thread takes a 16 KiB
// kernel stack and its record from the share, so a few thousand threads alive at once need
// more than the 64 MiB registered at start. They all wait on a barrier, then are joined, and a
// checksum of what they return is printed.
//
// Then the same in a child forked while the parent's threads are all alive (its kernel memory,
// a copy of the parent's, lies in the pieces the parent's VM registered; the child's VM must
// have them from the start, and grow from there), and once more in the parent after the child
// has ended. The output must match a native run. Optional argument: the thread count.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_barrier_t barrier;

static void *worker(void *arg) {
    long i = (long)arg;
    // Some stack of its own, written and read back.
    volatile char local[512];
    memset((char *)local, (int)(i & 0x7f), sizeof local);
    pthread_barrier_wait(&barrier);
    return (void *)(i * i % 1000003 + local[i % sizeof local]);
}

/// Starts `n` threads that wait on the barrier (count `n + 1`: the caller passes it last).
static pthread_t *start(long n) {
    pthread_t *threads = calloc(n, sizeof *threads);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 << 10);
    pthread_barrier_init(&barrier, NULL, n + 1);
    for (long i = 0; i < n; i++) {
        int e = pthread_create(&threads[i], &attr, worker, (void *)i);
        if (e != 0) {
            printf("thread %ld of %ld: %s\n", i, n, strerror(e));
            exit(1);
        }
    }
    pthread_attr_destroy(&attr);
    return threads;
}

/// Lets the `n` threads of `start` go, joins them and returns their checksum.
static long finish(pthread_t *threads, long n) {
    pthread_barrier_wait(&barrier);
    long sum = 0;
    for (long i = 0; i < n; i++) {
        void *r;
        pthread_join(threads[i], &r);
        sum += (long)r;
    }
    pthread_barrier_destroy(&barrier);
    free(threads);
    return sum;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 4000;
    pthread_t *threads = start(n);
    printf("%ld threads: checksum %ld\n", n, finish(threads, n));
    fflush(stdout);

    // Fork while n threads are alive; the child makes n of its own.
    threads = start(n);
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child == 0) {
        // Only this thread runs in the child; the barrier is the parent's business.
        pthread_t *mine = start(n);
        printf("child, %ld threads: checksum %ld\n", n, finish(mine, n));
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child) {
        perror("waitpid");
        return 1;
    }
    printf("child: exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    printf("parent, %ld threads across the fork: checksum %ld\n", n, finish(threads, n));
    threads = start(2 * n);
    printf("%ld threads: checksum %ld\n", 2 * n, finish(threads, 2 * n));
    return 0;
}
