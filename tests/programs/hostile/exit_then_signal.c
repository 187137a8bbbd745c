/* A child that has exited is a zombie: a signal sent to it then changes nothing, and its
 * parent's wait reports its exit status. The parent learns of the exit from EOF on a pipe
 * the child held (closed when it exits), then signals it at once, 20 times. */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    int exited = 0, killed = 0;
    for (int i = 0; i < 20; i++) {
        int p[2];
        pipe(p);
        pid_t c = fork();
        if (c == 0) {
            close(p[0]);
            _exit(3);
        }
        close(p[1]);
        char b;
        while (read(p[0], &b, 1) > 0) {
        }
        close(p[0]);
        kill(c, SIGTERM);
        int st;
        waitpid(c, &st, 0);
        exited += WIFEXITED(st) && WEXITSTATUS(st) == 3;
        killed += WIFSIGNALED(st);
    }
    printf("exited with 3: %d, killed: %d\n", exited, killed);
    return 0;
}
