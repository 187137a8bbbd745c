/* What a program run by a child's exec sees of how it was named, and of the descriptors it
 * inherits, as on Linux. A forked, vforked or posix_spawn'ed child's exec runs a host program
 * (`--children host`), which hrt started by the path its own walk resolved: AT_EXECFN, the
 * command name and a script interpreter's argument were `/tmp/.../prog` where Linux gives
 * `./link` and `link`. And a descriptor the program opened was opened by hrt with an
 * O_NOFOLLOW of its own, which the host program saw in F_GETFL (0500000, not 0100000).
 * Runs itself through a link, a link in a subdirectory and a `#!` script, from fork, vfork
 * (after a chdir) and posix_spawn; prints what each run sees. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scratch.h"

extern char **environ;

static void show(const char *how, const char *arg) {
    char comm[32] = {0};
    int fd = open("/proc/self/comm", O_RDONLY);
    if (fd < 0 || read(fd, comm, sizeof comm - 1) < 0)
        strcpy(comm, "?\n");
    printf("%s: arg %s, AT_EXECFN %s, comm %s", how, arg, (const char *)getauxval(AT_EXECFN), comm);
    printf("%s: descriptor 3's flags %o\n", how, fcntl(3, F_GETFL));
}

int main(int argc, char **argv) {
    if (argc > 2) { /* run by a script: argv[1] is the script's name, argv[2] how */
        show(argv[2], argv[1]);
        return 0;
    }
    if (argc > 1) {
        show(argv[1], argv[0]);
        return 0;
    }
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    char dir[] = "/tmp/hrt-exec-names-XXXXXX";
    if (n < 0 || enter_scratch(dir) != 0)
        return 1;
    self[n] = 0;
    if (symlink(self, "link") || mkdir("sub", 0755) || symlink("../link", "sub/link2"))
        return 1;
    FILE *f = fopen("script", "w");
    fprintf(f, "#!%s\n", self);
    fclose(f);
    chmod("script", 0755);
    int fd = open("script", O_RDONLY); /* descriptor 3, inherited by every exec */
    if (fd != 3)
        return 1;
    fflush(stdout);
    if (fork() == 0) {
        execl("./link", "x", "fork", (char *)0);
        _exit(127);
    }
    wait(NULL);
    if (fork() == 0) {
        execl("./script", "x", "fork-script", (char *)0);
        _exit(127);
    }
    wait(NULL);
    if (vfork() == 0) {
        if (chdir("sub") == 0)
            execl("link2", "x", "vfork-chdir", (char *)0);
        _exit(127);
    }
    wait(NULL);
    pid_t p;
    char *args[] = {"x", "spawn", NULL};
    if (posix_spawn(&p, "sub/link2", NULL, NULL, args, environ) == 0)
        waitpid(p, NULL, 0);
    unlink("sub/link2");
    rmdir("sub");
    unlink("link");
    unlink("script");
    rmdir(dir);
    return 0;
}
