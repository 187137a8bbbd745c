/* fexecve (execveat with AT_EMPTY_PATH) from a vfork child and from a fork child, of memfds
 * (files with no path the host could exec): one the new program keeps, one close-on-exec. The
 * new program says which of the two descriptors it has and its AT_EXECFN (/dev/fd/N with the
 * caller's N). A pipe is refused with EACCES. Under hrt a vfork child's exec starts a host
 * program, which went by the descriptor's host path and failed with ENOENT for a memfd. Last,
 * an exec by path with another argv[0]: AT_EXECFN and the command name follow the path. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int is_open(int fd) { return fcntl(fd, F_GETFD) >= 0; }

int main(int argc, char **argv) {
    if (argc > 3) {
        char comm[32] = "";
        FILE *f = fopen("/proc/self/comm", "r");
        if (f) {
            if (!fgets(comm, sizeof comm, f))
                comm[0] = 0;
            fclose(f);
        }
        comm[strcspn(comm, "\n")] = 0;
        printf("  %s: execfn %s, comm %s, kept memfd open %d, close-on-exec memfd open %d\n", argv[1],
               (char *)getauxval(AT_EXECFN), comm, is_open(atoi(argv[2])), is_open(atoi(argv[3])));
        return 3;
    }
    int src = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    int keep = memfd_create("keep", 0);
    int gone = memfd_create("gone", MFD_CLOEXEC);
    char buf[65536];
    ssize_t n;
    while ((n = read(src, buf, sizeof buf)) > 0) {
        if (write(keep, buf, n) != n || write(gone, buf, n) != n)
            return 1;
    }
    close(src);
    char k[16], g[16];
    snprintf(k, sizeof k, "%d", keep);
    snprintf(g, sizeof g, "%d", gone);
    int fds[2] = {keep, gone};
    const char *names[2] = {"kept memfd", "close-on-exec memfd"};
    for (int by_fork = 0; by_fork < 2; by_fork++) {
        for (int i = 0; i < 2; i++) {
            char *av[] = {argv[0], (char *)names[i], k, g, 0};
            pid_t c = by_fork ? fork() : vfork();
            if (c == 0) {
                fexecve(fds[i], av, environ);
                _exit(errno == ENOENT ? 2 : 9);
            }
            int st;
            waitpid(c, &st, 0);
            printf("%s + fexecve of the %s: status %d\n", by_fork ? "fork" : "vfork", names[i], WEXITSTATUS(st));
            fflush(stdout);
        }
    }
    int p[2];
    if (pipe(p) != 0)
        return 1;
    char *av[] = {argv[0], "pipe", k, g, 0};
    pid_t c = vfork();
    if (c == 0) {
        fexecve(p[0], av, environ);
        _exit(errno == EACCES ? 13 : 9);
    }
    int st;
    waitpid(c, &st, 0);
    printf("vfork + fexecve of a pipe: status %d\n", WEXITSTATUS(st));
    fflush(stdout);
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return 1;
    self[len] = 0;
    char *renamed[] = {"another-name", "exec by path", k, g, 0};
    c = vfork();
    if (c == 0) {
        execve(self, renamed, environ);
        _exit(9);
    }
    waitpid(c, &st, 0);
    printf("vfork + execve by path: status %d\n", WEXITSTATUS(st));
    return 0;
}
