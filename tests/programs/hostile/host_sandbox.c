// Under `hrt run --sandbox DIR`: files open only under DIR (argv[1]); argv[2] is a readable
// file outside it. Prints one "case: result" line per attempt.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void attempt(const char *what, int fd) {
    printf("%s: %s\n", what, fd >= 0 ? "opened" : strerrorname_np(errno));
    if (fd >= 0)
        close(fd);
}

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/created", argv[1]);
    attempt("create under DIR", open(path, O_CREAT | O_WRONLY, 0600));
    attempt("read under DIR", open(path, O_RDONLY));
    unlink(path);
    attempt("read outside", open(argv[2], O_RDONLY));
    snprintf(path, sizeof path, "%s/../escaped", argv[1]);
    attempt("create outside through ..", open(path, O_CREAT | O_WRONLY, 0600));
    unlink(path);
    attempt("write /dev/null", open("/dev/null", O_WRONLY));
    return 0;
}
