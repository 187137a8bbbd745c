/* getppid of an orphan: a grandchild whose parent exits sees its parent id change (to 1 or a
 * subreaper), as a child that waits for its parent to go checks it; a vfork child's parent is
 * the program. */
#include <stdio.h>
#include <unistd.h>
#include <sys/wait.h>

int main(void) {
    int p[2], q[2];
    if (pipe(p) != 0 || pipe(q) != 0) return 1;
    pid_t mid = fork();
    if (mid == 0) {
        if (fork() == 0) {
            pid_t before = getppid();
            if (write(q[1], "x", 1) != 1) _exit(1);
            for (int i = 0; i < 3000 && getppid() == before; i++) usleep(10000);
            pid_t after = getppid();
            char line[100];
            int n = snprintf(line, sizeof line, "orphan: parent was alive: %s, then changed: %s\n",
                             before > 1 ? "yes" : "no", after != before ? "yes" : "no");
            if (write(p[1], line, n) != n) _exit(1);
            _exit(0);
        }
        char c;
        if (read(q[0], &c, 1) != 1) _exit(1);
        _exit(0);
    }
    close(p[1]);
    close(q[1]);
    waitpid(mid, 0, 0);
    char buf[200];
    ssize_t n = read(p[0], buf, sizeof buf);
    if (n > 0) fwrite(buf, 1, n, stdout);
    pid_t me = getpid();
    pid_t v = vfork();
    if (v == 0) _exit(getppid() == me ? 0 : 1);
    int status = -1;
    waitpid(v, &status, 0);
    printf("vfork child's parent is the program: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "yes" : "no");
    return 0;
}
