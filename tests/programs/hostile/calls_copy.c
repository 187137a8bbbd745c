// Copies between two descriptors that never pass through the program: copy_file_range (with
// and without offsets, flags, a bad offset pointer, a pipe), splice (file to pipe to file,
// offsets, an offset on a pipe, a pipe without reader: SIGPIPE to a handler, and EPIPE), tee and
// sendfile. Each result and the bytes that arrived are printed.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "report.h"

static void show(const char *what, int fd) {
    char buf[64] = {0};
    long n = pread(fd, buf, sizeof buf - 1, 0);
    for (long i = 0; i < n; i++)
        if (!buf[i])
            buf[i] = '.';
    printf("%s: %ld bytes \"%s\"\n", what, n, n > 0 ? buf : "");
}

static volatile int sigpipes;

static void on_sigpipe(int sig) {
    (void)sig;
    sigpipes++;
}

static int fresh(const char *name) {
    return open(name, O_RDWR | O_CREAT | O_TRUNC, 0600);
}

int main(void) {
    char dir[] = "/tmp/hrt-calls-copy-XXXXXX";
    if (!mkdtemp(dir) || chdir(dir))
        return 1;
    int src = fresh("src");
    const char text[] = "0123456789abcdefghij";
    if (write(src, text, 20) != 20)
        return 1;
    lseek(src, 0, SEEK_SET);

    // copy_file_range at the descriptors' positions, then at offsets given (written back).
    int dst = fresh("dst");
    report("copy_file_range positions", copy_file_range(src, NULL, dst, NULL, 8, 0));
    printf("positions now %ld %ld\n", (long)lseek(src, 0, SEEK_CUR), (long)lseek(dst, 0, SEEK_CUR));
    loff_t in = 10, out = 2;
    report("copy_file_range offsets", copy_file_range(src, &in, dst, &out, 5, 0));
    printf("offsets now %ld %ld, positions %ld %ld\n", (long)in, (long)out, (long)lseek(src, 0, SEEK_CUR),
           (long)lseek(dst, 0, SEEK_CUR));
    show("dst", dst);
    report("copy_file_range past the end", copy_file_range(src, &(loff_t){100}, dst, NULL, 5, 0));
    report("copy_file_range flags 1", copy_file_range(src, NULL, dst, NULL, 5, 1));
    report("copy_file_range bad offset pointer", copy_file_range(src, (loff_t *)8, dst, NULL, 5, 0));
    report("copy_file_range bad descriptor", copy_file_range(src, NULL, 99, NULL, 5, 0));
    int p[2];
    if (pipe(p))
        return 1;
    report("copy_file_range to a pipe", copy_file_range(src, &(loff_t){0}, p[1], NULL, 5, 0));
    report("copy_file_range raw, offsets 0", syscall(SYS_copy_file_range, src, 0L, dst, 0L, 0L, 0L));

    // splice file -> pipe -> file, tee pipe -> pipe.
    loff_t off = 4;
    report("splice file to pipe", splice(src, &off, p[1], NULL, 6, 0));
    printf("offset now %ld\n", (long)off);
    int q[2];
    if (pipe(q))
        return 1;
    report("tee", tee(p[0], q[1], 100, 0));
    int out2 = fresh("out2");
    report("splice pipe to file", splice(p[0], NULL, out2, &(loff_t){3}, 100, 0));
    show("out2", out2);
    char teed[16] = {0};
    report("read the tee'd copy", read(q[0], teed, sizeof teed - 1));
    printf("tee'd: %s\n", teed);
    report("splice with an offset on a pipe", splice(p[0], &(loff_t){0}, out2, NULL, 1, 0));
    report("splice from an empty pipe, nonblocking", splice(p[0], NULL, out2, NULL, 1, SPLICE_F_NONBLOCK));
    report("tee between a file and a pipe", tee(src, q[1], 1, 0));

    // sendfile with an offset.
    int out3 = fresh("out3");
    off = 15;
    report("sendfile", sendfile(out3, src, &off, 100));
    printf("offset now %ld\n", (long)off);
    show("out3", out3);

    // A pipe without reader: SIGPIPE, then EPIPE.
    signal(SIGPIPE, on_sigpipe);
    close(q[0]);
    report("splice into a pipe without reader", splice(src, &(loff_t){0}, q[1], NULL, 4, 0));
    report("tee into a pipe without reader", tee(p[0], q[1], 4, SPLICE_F_NONBLOCK));
    printf("SIGPIPEs: %d\n", sigpipes);

    for (const char *n = "src\0dst\0out2\0out3\0"; *n; n += strlen(n) + 1)
        unlink(n);
    if (chdir("/") || rmdir(dir))
        return 1;
    return 0;
}
