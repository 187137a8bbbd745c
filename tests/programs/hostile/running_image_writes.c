/* A program's own executable cannot be opened for writing, truncated by an open or by
 * truncate(2) while it runs: ETXTBSY, as Linux refuses a write to a file it executes (under
 * hrt the host does not execute it, and all three succeeded: a program could overwrite
 * itself). The checks run in a copy of the program (exec'd), so a failure damages only the
 * copy; the original, no longer running in this process, opens for writing again. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "scratch.h"

static void show(const char *what, int r) {
    printf("%s: %s\n", what, r < 0 ? strerror(errno) : "allowed");
}

int main(int argc, char **argv) {
    if (argc > 2) { /* the copy: argv[1] is the original */
        errno = 0;
        int w = open("copy", O_WRONLY);
        show("open of the running copy for writing", w);
        errno = 0;
        show("open of it with O_TRUNC", open("copy", O_RDONLY | O_TRUNC));
        errno = 0;
        show("truncate of it", truncate("copy", 1 << 20));
        errno = 0;
        show("O_PATH open of it", open("copy", O_PATH | O_WRONLY));
        errno = 0;
        show("open of the original (not running here) for writing", open(argv[1], O_WRONLY));
        struct stat st;
        printf("the copy's size unchanged: %d\n", stat("copy", &st) == 0 && st.st_size == atol(argv[2]));
        unlink("copy");
        char dir[4096];
        if (getcwd(dir, sizeof dir))
            rmdir(dir);
        return 0;
    }
    char self[4096], dir[] = "/tmp/hrt-running-image-XXXXXX", size[32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0 || enter_scratch(dir))
        return 1;
    self[n] = 0;
    int in = open(self, O_RDONLY), out = open("copy", O_WRONLY | O_CREAT | O_TRUNC, 0755);
    char buf[65536];
    ssize_t got, total = 0;
    while ((got = read(in, buf, sizeof buf)) > 0)
        total += write(out, buf, got);
    close(in);
    close(out);
    snprintf(size, sizeof size, "%zd", total);
    execl("./copy", "copy", self, size, (char *)0);
    return 1;
}
