/* Cross-memory attach between a parent and its forked child: after the fork the parent
 * changes its buffer; the child reads the parent's (process_vm_readv on getppid()) and must
 * see the change, not its own copy, then writes into the parent's second buffer
 * (process_vm_writev), which the parent checks after wait. The child also reads itself. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define SIZE (256 * 1024)

static long differ(const unsigned char *p, unsigned char v) {
    long n = 0;
    for (size_t i = 0; i < SIZE; i++)
        n += p[i] != (unsigned char)(v + i % 251);
    return n;
}

static void fill(unsigned char *p, unsigned char v) {
    for (size_t i = 0; i < SIZE; i++)
        p[i] = (unsigned char)(v + i % 251);
}

int main(void) {
    unsigned char *buf = malloc(SIZE), *inbox = calloc(SIZE, 1), *copy = malloc(SIZE);
    fill(buf, 1);
    int go[2], done[2];
    if (pipe(go) || pipe(done))
        return 1;
    pid_t child = fork();
    if (child == 0) {
        char c;
        if (read(go[0], &c, 1) != 1)
            _exit(2);
        struct iovec local = {copy, SIZE}, remote = {buf, SIZE};
        ssize_t r = process_vm_readv(getppid(), &local, 1, &remote, 1, 0);
        printf("child: read the parent: %zd, differences from the parent's new bytes %ld\n", r, differ(copy, 2));
        r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        printf("child: read itself: %zd, differences from its own copy %ld\n", r, differ(copy, 1));
        struct iovec from = {buf, SIZE}, to = {inbox, SIZE};
        r = process_vm_writev(getppid(), &from, 1, &to, 1, 0);
        printf("child: wrote the parent's inbox: %zd\n", r);
        fflush(stdout);
        _exit(0);
    }
    fill(buf, 2);
    if (write(go[1], "g", 1) != 1)
        return 1;
    int status;
    waitpid(child, &status, 0);
    printf("parent: child status %d, inbox differences from the child's bytes %ld\n", status, differ(inbox, 1));
    return 0;
}
