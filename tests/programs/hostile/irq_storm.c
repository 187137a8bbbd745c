/* Interrupts in a stream: one thread maps and unmaps memory in a loop (each unmap sends the
 * other CPUs a TLB shootdown), while the main thread creates and joins threads and makes
 * system calls. Each interrupt that lands while a thread returns from an earlier one must not
 * leave a frame behind on the thread's kernel stack (it once grew until it overflowed). The
 * main thread waits a preemption quantum for its CPU now and then: 100 rounds by default. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static atomic_int stop, started;

static void *unmapper(void *arg) {
    (void)arg;
    long n = 0;
    while (!atomic_load(&stop)) {
        char *p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            perror("mmap");
            exit(1);
        }
        p[0] = 1;
        munmap(p, 1 << 16);
        n++;
        atomic_store(&started, 1);
    }
    return (void *)n;
}

static void *empty(void *arg) { return arg; }

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    pthread_t u;
    pthread_create(&u, NULL, unmapper, NULL);
    /* The rounds start after the unmapper's first unmap: on a loaded host its vCPU may not get
     * a host CPU before the main thread's 100 rounds are over (a CI run printed "no"). */
    while (!atomic_load(&started))
        sched_yield();
    long sum = 0;
    for (int i = 0; i < rounds; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, empty, (void *)(long)i)) {
            perror("pthread_create");
            return 1;
        }
        void *r;
        pthread_join(t, &r);
        sum += (long)r + getppid() * 0;
    }
    atomic_store(&stop, 1);
    void *n;
    pthread_join(u, &n);
    printf("rounds %d sum %ld unmapper ran: %s\n", rounds, sum, (long)n > 0 ? "yes" : "no");
    return 0;
}
