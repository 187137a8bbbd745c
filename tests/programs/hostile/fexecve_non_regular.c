/* fexecve and execveat(AT_EMPTY_PATH) of a descriptor that is no regular file (a socket, a
 * pipe, a directory) fail with EACCES, as execve checks a file (the Linux kernel's exec
 * selftest non-regular). Under hrt a socket gave ENXIO (the monitor's reopen of it).
 * Usage: fexecve_non_regular */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static void try(const char *what, int fd) {
    char *const argv[] = {"x", NULL}, *const envp[] = {NULL};
    errno = 0;
    int r = fexecve(fd, argv, envp);
    printf("fexecve(%s) = %d %s\n", what, r, strerrorname_np(errno));
    errno = 0;
    r = syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
    printf("execveat(%s, \"\", AT_EMPTY_PATH) = %d %s\n", what, r, strerrorname_np(errno));
}

int main(void) {
    int pipes[2];
    pipe(pipes);
    try("a socket", socket(AF_INET, SOCK_STREAM, 0));
    try("a pipe", pipes[0]);
    try("a directory", open("/", O_RDONLY | O_DIRECTORY));
    return 0;
}
