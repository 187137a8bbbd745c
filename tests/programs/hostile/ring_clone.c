// clone() and pthread_create through the C library's own wrappers, 300 of each: their
// `syscall` comes right where the wrapper's unwind entry ends (glibc's clone and clone3 end it
// there so that the child never unwinds into the parent's frames). Each vfork-style child
// (CLONE_VM | CLONE_VFORK) runs a function on a stack of its own and exits with a status the
// parent adds up; each thread returns a value the joiner adds up. Under `hrt run -v` the
// wrappers' sites are rewritten into calls like any other (in libc.so they kept SYSCALL,
// ~19 us a thread on a PVM host): the address of `clone` goes to stderr for the test to
// look for among the kept sites. stdout is compared with the native run.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

enum { ROUNDS = 300, STACK = 64 * 1024 };

static int child_main(void *arg) { return (int)(long)arg % 7; }

static void *thread_main(void *arg) { return (void *)((long)arg * 3); }

int main(void) {
    fprintf(stderr, "clone at %p\n", (void *)clone);
    char *stack = malloc(STACK);
    long statuses = 0, failures = 0;
    for (long i = 0; i < ROUNDS; i++) {
        pid_t pid = clone(child_main, stack + STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, (void *)i);
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
            failures++;
        else
            statuses += WEXITSTATUS(st);
    }
    printf("clone: %d children, statuses add up to %ld, %ld failed\n", ROUNDS, statuses, failures);
    long sum = 0;
    for (long i = 0; i < ROUNDS; i++) {
        pthread_t t;
        void *r = NULL;
        if (pthread_create(&t, NULL, thread_main, (void *)i) != 0 || pthread_join(t, &r) != 0)
            failures++;
        sum += (long)r;
    }
    printf("threads: %d joined, results add up to %ld, %ld failed\n", ROUNDS, sum, failures);
    free(stack);
    return 0;
}
