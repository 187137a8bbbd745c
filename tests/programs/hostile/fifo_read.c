/* Reading a FIFO opened by its path (which takes no RWF_NOWAIT on the host: hrt reads it
 * through a second, non-blocking description) gives every byte in order, EOF when the writer
 * is gone, and a writer whose reader closes early gets EPIPE, as on Linux. A forked child
 * writes; the parent reads. Usage: fifo_read DIR */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOTAL (200 * 1024)

static pid_t writer(const char *path, int forever) {
    pid_t c = fork();
    if (c != 0)
        return c;
    signal(SIGPIPE, SIG_IGN);
    int fd = open(path, O_WRONLY);
    unsigned char buf[4096];
    for (long sent = 0; forever || sent < TOTAL; sent += sizeof buf) {
        for (size_t i = 0; i < sizeof buf; i++)
            buf[i] = (unsigned char)((sent + i) * 7);
        if (write(fd, buf, sizeof buf) < 0) {
            printf("writer: %s\n", strerrorname_np(errno));
            fflush(stdout);
            _exit(0);
        }
        if ((sent / sizeof buf) % 16 == 15)
            usleep(200);
    }
    _exit(0);
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 2;
    setvbuf(stdout, NULL, _IONBF, 0);
    char path[4096];
    snprintf(path, sizeof path, "%s/fifo", argv[1]);
    unlink(path);
    if (mkfifo(path, 0600) != 0)
        return 1;
    pid_t c = writer(path, 0);
    int fd = open(path, O_RDONLY);
    unsigned char buf[8192];
    long got = 0, wrong = 0;
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < n; i++)
            wrong += buf[i] != (unsigned char)((got + i) * 7);
        got += n;
    }
    printf("read %ld bytes, %ld wrong, then %zd\n", got, wrong, n);
    close(fd);
    waitpid(c, NULL, 0);

    c = writer(path, 1);
    fd = open(path, O_RDONLY);
    printf("first read: %zd\n", read(fd, buf, 100));
    close(fd);
    int st;
    waitpid(c, &st, 0);
    printf("writer ended: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    unlink(path);
    return 0;
}
