// fork() after parallel regions whose workers spin for their next region
// (OMP_WAIT_POLICY=active): the kernel's runtime's waiters spun in its own code, where no safe
// point for the fork came, and every fork gave up after 2 s with EAGAIN. Also a fork while
// another thread waits for an OpenMP lock the forking thread holds.
#include <omp.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int fork_and_wait(const char *what) {
    fflush(stdout);
    pid_t p = fork();
    if (p < 0) {
        perror(what);
        return 1;
    }
    if (p == 0)
        _exit(7);
    int st;
    waitpid(p, &st, 0);
    printf("%s: child exited %d\n", what, WEXITSTATUS(st));
    return 0;
}

int main(void) {
    int sum = 0;
#pragma omp parallel reduction(+ : sum)
    sum += 1;
    printf("first region ran: %d\n", sum > 0);
    int failed = 0;
    for (int i = 0; i < 3; i++)
        failed |= fork_and_wait("fork after a region");
    omp_lock_t lock;
    omp_init_lock(&lock);
#pragma omp parallel num_threads(2)
    {
#pragma omp master
        {
            omp_set_lock(&lock);
#pragma omp flush
        }
#pragma omp barrier
        if (omp_get_thread_num() == 0) {
            failed |= fork_and_wait("fork holding a lock another thread waits for");
            omp_unset_lock(&lock);
        } else {
            omp_set_lock(&lock);
            omp_unset_lock(&lock);
        }
    }
    omp_destroy_lock(&lock);
    printf("done, failures %d\n", failed);
    return failed;
}
