/* A program forks again and again while two of its threads keep taking write permission
 * away from a page and giving it back (each such mprotect flushes the other CPUs' TLBs);
 * each child touches a page, takes its write permission away, and exits with 7.
 * Under hrt a thread preempted in the middle of such a flush, on the forking thread's CPU,
 * once left the flush's request flag held in the child's copy of the kernel: the child's
 * own mprotect then spun for good and its parent waited in waitpid for ever. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORKS 150
#define CHANGERS 2

static atomic_int stop;

static void *changer(void *arg) {
    char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    while (!atomic_load(&stop)) {
        page[0]++;
        if (mprotect(page, 4096, PROT_READ) != 0 || mprotect(page, 4096, PROT_READ | PROT_WRITE) != 0) {
            perror("mprotect");
            exit(1);
        }
    }
    return arg;
}

int main(void) {
    char *area = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (area == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    pthread_t threads[CHANGERS];
    for (int i = 0; i < CHANGERS; i++)
        pthread_create(&threads[i], NULL, changer, NULL);
    int sevens = 0;
    for (int i = 0; i < FORKS; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        if (pid == 0) {
            area[0] = 6;
            if (mprotect(area, 4096, PROT_READ) != 0)
                _exit(1);
            _exit(area[0] + 1);
        }
        int status;
        if (waitpid(pid, &status, 0) != pid) {
            perror("waitpid");
            return 1;
        }
        sevens += WIFEXITED(status) && WEXITSTATUS(status) == 7;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < CHANGERS; i++)
        pthread_join(threads[i], NULL);
    printf("%d children forked while %d threads changed protections: %d exited with 7\n", FORKS, CHANGERS, sevens);
    return sevens == FORKS ? 0 : 1;
}
