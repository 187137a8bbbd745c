/* execve's argument limit counts the file name too, as Linux copies it onto the new stack
 * before the strings: argv that fit with a short name are E2BIG with a name 4,000 bytes
 * long (hrt counted only argv and envp, and ran the program). From the program's own exec
 * and from a forked child's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scratch.h"

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[argc - 1], "RAN")) {
        printf("ran with all its arguments: %d\n", argc > 1000);
        unlink("p");
        char dir[4096];
        if (getcwd(dir, sizeof dir))
            rmdir(dir);
        return 0;
    }
    struct rlimit rl;
    getrlimit(RLIMIT_STACK, &rl);
    unsigned long limit = rl.rlim_cur == RLIM_INFINITY ? 6ul << 20 : rl.rlim_cur / 4;
    limit = limit < 128ul << 10 ? 128ul << 10 : limit > 6ul << 20 ? 6ul << 20 : limit;
    /* Empty strings, 9 bytes each with their pointers: 2,000 bytes short of the limit. */
    long n = (long)(limit - 2000) / 9;
    char **av = calloc(n + 1, sizeof *av);
    for (long i = 0; i < n; i++)
        av[i] = "";
    av[n - 1] = "RAN";
    char self[4096], dir[] = "/tmp/hrt-exec-filename-XXXXXX";
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len < 0 || enter_scratch(dir) || (self[len] = 0, symlink(self, "p")))
        return 1;
    static char longname[4200];
    for (int i = 0; i < 2000; i++)
        strcat(longname, "./");
    strcat(longname, "p");
    char *none[] = {NULL};
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        execve(longname, av, none);
        printf("a forked child's exec with a long name: %s\n", strerror(errno));
        fflush(stdout);
        _exit(0);
    }
    waitpid(c, NULL, 0);
    execve(longname, av, none);
    printf("the program's exec with a long name: %s\n", strerror(errno));
    fflush(stdout);
    execve("./p", av, none);
    printf("the program's exec with a short name: %s\n", strerror(errno));
    return 1;
}
