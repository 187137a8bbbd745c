/* An exec of a file that another process has open for writing fails with ETXTBSY, as Linux's
 * execve refuses it; once the writer closes it, the exec runs. Under `hrt run --children hrt`
 * the exec ran the file (only the program's own descriptors were looked at). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char copy[64];

static void run_copy(const char *when) {
    pid_t c = fork();
    if (c == 0) {
        execl(copy, "exec-write-busy-copy", "ran", (char *)0);
        printf("%s: exec failed: %s\n", when, strerror(errno));
        fflush(stdout);
        _exit(1);
    }
    int st;
    waitpid(c, &st, 0);
    printf("%s: status %d\n", when, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 1) {
        printf("the copy %s\n", argv[1]);
        return 0;
    }
    /* A copy of this program, closed by its writer. */
    snprintf(copy, sizeof copy, "/tmp/hrt-exec-write-busy-%d", (int)getpid());
    int in = open("/proc/self/exe", O_RDONLY);
    int out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    char b[65536];
    ssize_t n;
    while ((n = read(in, b, sizeof b)) > 0)
        if (write(out, b, n) != n)
            return 1;
    close(in);
    close(out);
    /* Another process opens it for writing and holds it until told. */
    int ready[2], hold[2];
    if (pipe(ready) || pipe(hold))
        return 1;
    pid_t w = fork();
    if (w == 0) {
        int fd = open(copy, O_WRONLY);
        char c = fd >= 0 ? 'y' : 'n';
        close(hold[1]);
        if (write(ready[1], &c, 1) != 1)
            _exit(1);
        while (read(hold[0], &c, 1) > 0)
            ;
        _exit(0);
    }
    close(hold[0]);
    close(ready[1]);
    char c = 0;
    if (read(ready[0], &c, 1) != 1 || c != 'y')
        return 1;
    run_copy("another process writing it");
    close(hold[1]);
    int st;
    waitpid(w, &st, 0);
    run_copy("once it closed it");
    unlink(copy);
    return 0;
}
