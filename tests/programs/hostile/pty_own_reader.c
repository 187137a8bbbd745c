/* A program that writes into a pseudo-terminal it reads itself (libuv's tty_pty_partial test):
 * a thread makes blocking writes of 64 KiB in all to the slave, in chunks of 100 bytes to
 * 64 KiB, then closes it; the main thread reads the master until EIO. Under hrt a chunk too
 * large for the terminal's buffer blocked the thread that serves the program's calls, and the
 * read that would have made room never came: the program hung for good. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#define TOTAL 65536

static int slave;
static size_t chunk;
static long wrote;

static void *writer(void *unused) {
    static char buf[TOTAL];
    memset(buf, 'x', sizeof buf);
    (void)unused;
    while (wrote < TOTAL) {
        size_t n = chunk < (size_t)(TOTAL - wrote) ? chunk : (size_t)(TOTAL - wrote);
        ssize_t r = write(slave, buf, n);
        if (r <= 0) {
            perror("write");
            break;
        }
        wrote += r;
    }
    close(slave);
    return NULL;
}

int main(void) {
    size_t chunks[] = {100, 1024, 4096, 8192, 65536};
    for (int i = 0; i < 5; i++) {
        int master;
        struct termios raw;
        if (openpty(&master, &slave, NULL, NULL, NULL) != 0) {
            perror("openpty");
            return 1;
        }
        tcgetattr(slave, &raw);
        cfmakeraw(&raw);
        tcsetattr(slave, TCSANOW, &raw);
        chunk = chunks[i];
        wrote = 0;
        pthread_t t;
        pthread_create(&t, NULL, writer, NULL);
        static char rb[TOTAL];
        long got = 0;
        ssize_t r;
        while ((r = read(master, rb, sizeof rb)) > 0)
            got += r;
        int err = errno;
        pthread_join(t, NULL);
        printf("chunks of %zu: wrote %ld, read %ld, then %s\n", chunk, wrote, got,
               r < 0 && err == EIO ? "EIO" : "something else");
        close(master);
    }
    printf("pty own reader: done\n");
    return 0;
}
