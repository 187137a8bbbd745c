// Forked children that exit while their parent sends them SIGTERM, over and over, with the
// signal at slightly different moments of the child's end: each child must end, its exit
// status 0 or killed by SIGTERM, whichever came first, as on Linux. (Under hrt a child that had
// begun its end, waiting for the host there, took the SIGTERM as a second end of its own, found
// the end claimed, and waited for good with its only vCPU: the parent hung in waitpid.) The
// children use process-shared memory (a semaphore), which makes their end wake robust-list
// waiters through the host: a wait where the signal can come.
#define _GNU_SOURCE
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200;
    sem_t *sem = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sem == MAP_FAILED || sem_init(sem, 1, 0) != 0) {
        perror("shared semaphore");
        return 1;
    }
    int ended = 0;
    for (int i = 0; i < n; i++) {
        pid_t c = fork();
        if (c < 0) {
            perror("fork");
            return 1;
        }
        if (c == 0) {
            sem_post(sem);
            exit(0);
        }
        sem_wait(sem);
        // A varying delay: the signal meets the child at another point of its end each time.
        for (volatile int k = 0; k < (i % 16) * 200; k++)
            ;
        kill(c, SIGTERM);
        int st;
        if (waitpid(c, &st, 0) != c) {
            perror("waitpid");
            return 1;
        }
        if ((WIFEXITED(st) && WEXITSTATUS(st) == 0) || (WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM))
            ended++;
        else
            printf("child %d: status %#x\n", i, st);
    }
    printf("%d children signalled as they exited: %d ended with status 0 or SIGTERM\n", n, ended);
    return 0;
}
