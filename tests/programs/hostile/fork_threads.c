/* Threads that outnumber the vCPUs, each forking children in a loop while the others spin:
 * two threads of one vCPU may both be forking (one preempted while it holds the other CPUs
 * frozen); the second must wait for the first, not park the CPU that would thaw the rest. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define FORKS 12

static void *forker(void *arg) {
    long id = (long)arg, sum = 0;
    for (int i = 0; i < FORKS; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            exit(1);
        }
        if (pid == 0)
            _exit((int)(id * 16 + i) & 0x7f);
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
            fprintf(stderr, "thread %ld: child %d did not exit normally\n", id, i);
            exit(1);
        }
        sum += WEXITSTATUS(status);
        for (volatile int spin = 0; spin < 100000; spin++)
            ;
    }
    return (void *)sum;
}

int main(void) {
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, forker, (void *)i);
    for (int i = 0; i < THREADS; i++) {
        void *sum;
        pthread_join(t[i], &sum);
        printf("thread %d: %d children, exit statuses sum to %ld\n", i, FORKS, (long)sum);
    }
    return 0;
}
