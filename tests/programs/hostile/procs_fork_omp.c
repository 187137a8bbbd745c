/* fork() in an OpenMP program before its first parallel region (after one, GNU libgomp's
 * child hangs natively): the child and then the parent run regions of two threads. */
#include <omp.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int region(void) {
    int n = 0;
#pragma omp parallel reduction(+ : n)
    n += omp_get_thread_num() + 1;
    return n;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    omp_set_num_threads(2);
    pid_t p = fork();
    if (p == 0)
        _exit(region());
    int st = 0;
    if (waitpid(p, &st, 0) != p || !WIFEXITED(st))
        return 1;
    printf("child's region: %d\n", WEXITSTATUS(st));
    printf("parent's region: %d\n", region());
    p = fork();
    if (p == 0)
        _exit(omp_get_max_threads());
    waitpid(p, &st, 0);
    printf("child after the parent's region: max threads %d\n", WEXITSTATUS(st));
    return 0;
}
