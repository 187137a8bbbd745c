/* Forks while the program's other threads sleep a few microseconds at a time, over and over
 * (their vCPUs halt, and their timers may wake them while the parent's memory is copied): every
 * child must find the heap, a mutex and thread creation working, and exit 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static void *busy(void *a) {
    long id = (long)a;
    for (;;) {
        struct timespec ts = {0, 20000 + id * 7000};
        nanosleep(&ts, 0);
        char *p = malloc(100 + id * 50);
        memset(p, (int)id, 100);
        pthread_mutex_lock(&mu);
        counter++;
        pthread_mutex_unlock(&mu);
        free(p);
    }
    return 0;
}
static void *child_thread(void *a) { return (void *)((long)a + 1); }
/* The mutex is the program's own: without these a child forked while a sleeper held it would
 * find it held by a thread it does not have, natively as under hrt (POSIX: only the forking
 * thread is copied). */
static void prepare(void) { pthread_mutex_lock(&mu); }
static void release(void) { pthread_mutex_unlock(&mu); }
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 60;
    pthread_t t;
    pthread_atfork(prepare, release, release);
    for (long i = 0; i < 3; i++)
        pthread_create(&t, 0, busy, (void *)i);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) {
            pthread_mutex_lock(&mu);
            long c = counter;
            pthread_mutex_unlock(&mu);
            void *r;
            pthread_t u;
            char *q = malloc(1 << 16);
            memset(q, 1, 1 << 16);
            if (pthread_create(&u, 0, child_thread, (void *)c) || pthread_join(u, &r) || (long)r != c + 1)
                _exit(3);
            free(q);
            _exit(0);
        }
        int st;
        if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            bad++;
            fprintf(stderr, "child %d: status %#x\n", i, st);
        }
        struct timespec ts = {0, 300000};
        nanosleep(&ts, 0);
    }
    printf("%d forks, %d bad\n", n, bad);
    return bad != 0;
}
