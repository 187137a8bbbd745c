/* Reads a pseudo-terminal's master side until its slave side is closed: a child in a new
 * session opens the slave (its controlling terminal), writes a line and exits; the parent's
 * read of the master then fails with EIO, which only says the other side is gone (Linux never
 * stops a reader of a master). Prints what it read and how it ended. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0) {
        perror("posix_openpt");
        return 2;
    }
    const char *slave = ptsname(m);
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 2;
    }
    if (child == 0) {
        setsid();
        int s = open(slave, O_RDWR);
        if (s < 0)
            _exit(3);
        const char line[] = "hello from the child\n";
        if (write(s, line, strlen(line)) != (ssize_t)strlen(line))
            _exit(4);
        close(s);
        _exit(0);
    }
    char buf[256], all[1024];
    size_t total = 0;
    for (;;) {
        ssize_t n = read(m, buf, sizeof buf);
        if (n > 0) {
            if (total + (size_t)n < sizeof all) {
                memcpy(all + total, buf, (size_t)n);
                total += (size_t)n;
            }
            continue;
        }
        if (n == 0) {
            printf("end of file after %zu bytes\n", total);
        } else if (errno == EIO) {
            printf("EIO after %zu bytes\n", total);
        } else {
            perror("read");
            return 1;
        }
        break;
    }
    int status;
    waitpid(child, &status, 0);
    printf("read: %.*s", (int)total, all);
    printf("child exit status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
