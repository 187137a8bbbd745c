// A thread dies of SIGABRT while the main thread calls exit(0) at the same moment. Linux ends
// the process once: either "Aborted" and status 134, or status 0 without the report. The one
// thing that must never happen is the report of one end with the status of the other.
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

static atomic_int go;

static void *aborter(void *arg) {
    (void)arg;
    while (!atomic_load(&go))
        ;
    abort();
}

int main(int argc, char **argv) {
    int delay = argc > 1 ? atoi(argv[1]) : 0;
    pthread_t t;
    pthread_create(&t, NULL, aborter, NULL);
    atomic_store(&go, 1);
    for (volatile int i = 0; i < delay; i++)
        ;
    exit(0);
}
