// flock between descriptors of one file: a second open file description conflicts, a duplicate
// shares the lock, LOCK_NB reports EWOULDBLOCK, a forked child sees the parent's lock, bad
// operations and descriptors fail as on Linux. Compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, int r) {
    printf("%-36s %s\n", what, r == 0 ? "0" : strerror(errno));
}

int main(void) {
    char path[] = "/tmp/hrt-flock-XXXXXX";
    int a = mkstemp(path);
    if (a < 0)
        return 1;
    int b = open(path, O_RDWR);
    int d = dup(a);
    show("a exclusive", flock(a, LOCK_EX));
    show("b exclusive, no wait", flock(b, LOCK_EX | LOCK_NB));
    show("b shared, no wait", flock(b, LOCK_SH | LOCK_NB));
    show("dup of a exclusive (same lock)", flock(d, LOCK_EX | LOCK_NB));
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        int c = open(path, O_RDWR);
        show("child: own open, no wait", flock(c, LOCK_EX | LOCK_NB));
        show("child: inherited a, no wait", flock(a, LOCK_EX | LOCK_NB));
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(child, &st, 0);
    show("a downgrade to shared", flock(a, LOCK_SH));
    show("b shared, no wait", flock(b, LOCK_SH | LOCK_NB));
    show("b unlock", flock(b, LOCK_UN));
    show("a unlock", flock(a, LOCK_UN));
    show("b exclusive, no wait", flock(b, LOCK_EX | LOCK_NB));
    show("bad operation", flock(b, 77));
    show("bad descriptor", flock(999, LOCK_EX));
    close(b);
    show("a exclusive after b closed", flock(a, LOCK_EX | LOCK_NB));
    unlink(path);
    return 0;
}
