/* A child's SIGCHLD belongs to the moment it ended: on Linux it is pending before the child
 * can be waited for, so it never interrupts a later wait for another child. Each round starts
 * a child that waits on a pipe, then one that ends at once; the parent waits for the second
 * (its handler has run by then on Linux), then lets the first go and waits for it: that wait
 * must not fail with EINTR. Under hrt the host's SIGCHLD reached the program when a thread of
 * `hrt` passed it on, on a loaded host after the first wait had returned, and then made the
 * second fail with EINTR (kill_group's grandchild in CI), and the handler had not run yet when
 * the first returned (~1 round in 100 on a loaded host). Also counts the handler's runs: two a
 * round, one per child (the first child's SIGCHLD is taken before the second child ends). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t handled;
static void on_child(int s) {
    (void)s;
    handled++;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 60;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_child; /* no SA_RESTART: an interrupted wait fails with EINTR */
    sigaction(SIGCHLD, &sa, 0);
    int failed = 0, late = 0;
    for (int i = 0; i < rounds; i++) {
        int go[2];
        if (pipe(go) != 0)
            return 1;
        pid_t waiting = fork();
        if (waiting == 0) {
            char b;
            close(go[1]);
            read(go[0], &b, 1);
            _exit(2);
        }
        close(go[0]);
        int st, before = handled;
        pid_t quick = fork();
        if (quick == 0)
            _exit(1);
        if (waitpid(quick, &st, 0) != quick) {
            printf("round %d: wait for the child that ended: %s\n", i, strerror(errno));
            failed++;
        }
        if (handled == before)
            late++;
        close(go[1]);
        if (waitpid(waiting, &st, 0) != waiting) {
            printf("round %d: wait for the child let go after it: %s\n", i, strerror(errno));
            failed++;
            waitpid(waiting, &st, 0);
        }
    }
    printf("%d rounds, %d failed waits, %d with the handler not run when the wait returned, handler runs %s\n", rounds,
           failed, late, handled == 2 * rounds ? "two a round" : handled < 2 * rounds ? "fewer" : "more");
    return 0;
}
