/* The program's own exec (the VM's: from the program itself, and fexecve from a forked child)
 * as Linux refuses it: a file one of its descriptors has open for writing is ETXTBSY (hrt ran
 * it), a script named through a close-on-exec descriptor is ENOENT (its interpreter could not
 * open /dev/fd/N; hrt ran it), an O_PATH descriptor of a symbolic link ELOOP (hrt: EACCES). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scratch.h"

static char *args[] = {"x", "RAN", NULL}, *none[] = {NULL};

static void by_descriptor(const char *what, int fd) {
    fflush(stdout);
    if (fork() == 0) {
        syscall(SYS_execveat, fd, "", args, none, AT_EMPTY_PATH);
        printf("%s: %s\n", what, strerror(errno));
        fflush(stdout);
        _exit(0);
    }
    wait(NULL);
    close(fd);
}

static void copy(const char *from, const char *to) {
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, n) != n)
            break;
    close(in);
    close(out);
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[argc - 1], "RAN")) {
        printf("  the program ran\n");
        return 0;
    }
    char self[4096], dir[] = "/tmp/hrt-exec-fd-XXXXXX";
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0 || enter_scratch(dir))
        return 1;
    self[n] = 0;
    FILE *f = fopen("script", "w");
    fprintf(f, "#!%s\n", self);
    fclose(f);
    chmod("script", 0755);
    symlink(self, "link");
    copy(self, "prog");
    by_descriptor("a script through a close-on-exec descriptor", open("script", O_RDONLY | O_CLOEXEC));
    by_descriptor("an O_PATH descriptor of a link", open("link", O_PATH | O_NOFOLLOW));
    by_descriptor("a file open for reading and writing", open("prog", O_RDWR));
    by_descriptor("a file open for reading only", open("prog", O_RDONLY));
    int w = open("prog", O_WRONLY); /* kept open: the exec must refuse the file */
    unlink("script");
    unlink("link");
    fflush(stdout);
    execv("./prog", args);
    printf("the program's exec of a file it has open for writing: %s\n", strerror(errno));
    close(w);
    unlink("prog");
    rmdir(dir);
    return 0;
}
