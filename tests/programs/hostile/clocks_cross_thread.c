/* Time never goes back from one thread to another: each of four threads (one per CPU where
 * there are as many) reads a time stamp another thread published, then the clock, and counts
 * the readings older than the stamp it had seen; then publishes its own. For CLOCK_MONOTONIC
 * and CLOCK_REALTIME through the vDSO and CLOCK_MONOTONIC as a system call. Prints the count
 * of each (0 natively). A bare RDTSC in the vDSO, which may run before the load of the other
 * thread's stamp, gave hundreds to thousands of readings 4-25 ns back at --cpus 2 and 4. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define THREADS 4

static struct {
    clockid_t clock;
    int syscall;
    long reads;
    const char *name;
} kinds[] = {
    {CLOCK_MONOTONIC, 0, 300000, "monotonic vdso"},
    {CLOCK_REALTIME, 0, 300000, "realtime vdso"},
    {CLOCK_MONOTONIC, 1, 30000, "monotonic syscall"},
};

static _Atomic int64_t stamp;
static _Atomic long back, started;
static int kind;

static int64_t read_clock(void) {
    struct timespec t;
    if (kinds[kind].syscall)
        syscall(SYS_clock_gettime, kinds[kind].clock, &t);
    else
        clock_gettime(kinds[kind].clock, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void *reader(void *arg) {
    long id = (long)arg, ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(id % (ncpu > 0 ? ncpu : 1), &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    atomic_fetch_add(&started, 1);
    while (atomic_load(&started) < THREADS)
        ;
    for (long i = 0; i < kinds[kind].reads; i++) {
        int64_t seen = atomic_load(&stamp);
        int64_t now = read_clock();
        if (now < seen)
            atomic_fetch_add(&back, 1);
        int64_t cur = atomic_load(&stamp);
        while (cur < now && !atomic_compare_exchange_weak(&stamp, &cur, now))
            ;
    }
    return NULL;
}

int main(void) {
    for (kind = 0; kind < (int)(sizeof kinds / sizeof kinds[0]); kind++) {
        pthread_t th[THREADS];
        atomic_store(&stamp, 0);
        atomic_store(&back, 0);
        atomic_store(&started, 0);
        for (long i = 0; i < THREADS; i++)
            pthread_create(&th[i], NULL, reader, (void *)i);
        for (int i = 0; i < THREADS; i++)
            pthread_join(th[i], NULL);
        printf("%s: %ld readings went back\n", kinds[kind].name, atomic_load(&back));
    }
    return 0;
}
