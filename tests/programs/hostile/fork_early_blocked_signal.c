/* A signal the forking thread blocks, sent to the child right after fork, stays pending in
 * the child (its thread has the forking thread's mask), as on Linux. Under hrt the child's
 * kernel raised it before its thread existed, found no thread blocking it and its default
 * action ended the child (8 rounds of 10). */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(void) {
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, 0);
    int pending = 0, rounds = 20;
    for (int i = 0; i < rounds; i++) {
        pid_t p = fork();
        if (p == 0) {
            struct timespec t = {3, 0};
            _exit(sigtimedwait(&usr1, 0, &t) == SIGUSR1 ? 0 : 1);
        }
        struct timespec d = {0, i * 300000L};
        nanosleep(&d, 0);
        kill(p, SIGUSR1);
        int st;
        waitpid(p, &st, 0);
        pending += WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (!WIFEXITED(st)) printf("round %d: the child died of signal %d\n", i, WTERMSIG(st));
    }
    printf("a blocked SIGUSR1 sent right after fork: pending in %d of %d children\n", pending, rounds);
    return 0;
}
