/* 3 threads hand a token round by spinning (no system call): with more threads than vCPUs
 * this finishes only if the kernel preempts them, as Linux does. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
static atomic_int turn;
enum { N = 3, ROUNDS = 30 };
static void *run(void *arg) {
    int me = (int)(long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        while (atomic_load(&turn) % N != me) ;
        atomic_fetch_add(&turn, 1);
    }
    return NULL;
}
int main(void) {
    pthread_t t[N];
    for (long i = 0; i < N; i++) pthread_create(&t[i], NULL, run, (void *)i);
    for (int i = 0; i < N; i++) pthread_join(t[i], NULL);
    printf("token passed %d times\n", atomic_load(&turn));
    return 0;
}
