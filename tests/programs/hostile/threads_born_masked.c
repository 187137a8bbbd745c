// Threads created with a CPU mask in their attributes (pthread_attr_setaffinity_np, as
// libgomp's bound teams make them): glibc starts the thread held on a lock, sets its mask from
// the creator with sched_setaffinity, then lets it go. Each thread reports the CPU it starts
// on, which must be the one its mask names. Under HRT the creator's sched_setaffinity waits
// for a running thread to move; a new thread that blocks on glibc's lock meanwhile must not
// hold it up (it moves when its call ends), or every such creation stalls for the wait's
// bound and the kernel says so on stderr.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>

static void *report_cpu(void *arg) {
    (void)arg;
    return (void *)(long)sched_getcpu();
}

int main(void) {
    cpu_set_t all;
    if (sched_getaffinity(0, sizeof all, &all) != 0) {
        perror("sched_getaffinity");
        return 1;
    }
    int cpus[CPU_SETSIZE], n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &all))
            cpus[n++] = c;
    const int rounds = 2000;
    int misplaced = 0;
    for (int i = 0; i < rounds; i++) {
        int want = cpus[i % n];
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(want, &one);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setaffinity_np(&attr, sizeof one, &one);
        pthread_t t;
        int err = pthread_create(&t, &attr, report_cpu, NULL);
        pthread_attr_destroy(&attr);
        if (err != 0) {
            printf("pthread_create with a mask of CPU %d: error %d\n", want, err);
            return 1;
        }
        void *got;
        pthread_join(t, &got);
        if ((long)got != want)
            misplaced++;
    }
    printf("%d threads created with a one-CPU mask, %d started elsewhere\n", rounds, misplaced);
    return 0;
}
