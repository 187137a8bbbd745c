/* A crash that leaves a core file: markers in a global and on the heap, then the ending the
 * first argument names (segv: a write through NULL; abort; quit: raise(SIGQUIT)). It prints
 * the markers' addresses first, so that a test can find them in the core's memory. "fork"
 * crashes in a forked child instead and prints how its parent saw it end; "threads" starts a
 * sleeping and a spinning thread before the write through NULL. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

char global_marker[64];
static int *volatile nowhere;
static volatile int spinning = 1;

static void *sleeper(void *arg) {
    for (;;)
        sleep(100);
    return arg;
}

static void *spinner(void *arg) {
    while (spinning)
        ;
    return arg;
}

__attribute__((noinline)) static void crash(const char *how) {
    if (!strcmp(how, "abort"))
        abort();
    if (!strcmp(how, "quit")) {
        /* Started in the background by a shell without job control, it ignores SIGQUIT. */
        signal(SIGQUIT, SIG_DFL);
        raise(SIGQUIT);
    }
    *nowhere = 1;
}

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "segv";
    strcpy(global_marker, "global-marker-of-the-core-test");
    char *heap = malloc(1 << 20);
    strcpy(heap, "heap-marker-of-the-core-test");
    if (!strcmp(how, "fork")) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            crash("segv");
        int st;
        waitpid(pid, &st, 0);
        printf("child: %s %d%s\n", WIFSIGNALED(st) ? "killed by" : "exited", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
               WIFSIGNALED(st) && WCOREDUMP(st) ? " (core dumped)" : "");
        return 0;
    }
    printf("global %p\nheap %p\n", (void *)global_marker, (void *)heap);
    fflush(stdout);
    if (!strcmp(how, "threads")) {
        pthread_t a, b;
        pthread_create(&a, 0, sleeper, 0);
        pthread_create(&b, 0, spinner, 0);
        usleep(100 * 1000);
    }
    crash(how);
    return 0;
}
