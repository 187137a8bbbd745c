/* A process title written over the argument strings (setproctitle, as postgres and nginx do)
 * is what other processes read in /proc/<pid>/cmdline, as on Linux: a short one within the
 * arguments' room, then one that runs on into the environment strings (the last argument's NUL
 * written over). A forked child reads its parent's cmdline while the parent waits for it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

extern char **environ;

/* /proc/<pid>/cmdline with its NULs shown as '|', trailing NULs dropped. */
static void show(const char *who, pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    while (n > 0 && buf[n - 1] == 0)
        n--;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == 0)
            buf[i] = '|';
    printf("%s: %.*s\n", who, (int)(n < 0 ? 0 : n), buf);
    fflush(stdout);
}

static void child_reads_parent(const char *what) {
    fflush(stdout);
    pid_t c = fork();
    if (c < 0) {
        perror("fork");
        exit(1);
    }
    if (c == 0) {
        show(what, getppid());
        _exit(0);
    }
    int st;
    if (waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("child failed\n");
        exit(1);
    }
}

int main(int argc, char **argv) {
    char *start = argv[0];
    char *end = argv[argc - 1] + strlen(argv[argc - 1]); /* the last argument's NUL */
    size_t room = end - start;
    child_reads_parent("as started");

    /* postgres's way: the title, the rest of the room NULs. */
    memset(start, 0, room + 1);
    snprintf(start, room, "title: idle");
    child_reads_parent("short title");
    show("own short title", getpid());

    /* nginx's way: the environment strings moved away, the title runs on over them. */
    int envc = 0;
    while (environ[envc])
        envc++;
    char **copy = calloc(envc + 1, sizeof *copy);
    for (int i = 0; i < envc; i++)
        copy[i] = strdup(environ[i]);
    if (envc == 0 || environ[0] != end + 1) {
        printf("no environment right after the arguments\n");
        return 1;
    }
    size_t more = strlen(environ[0]) + 1;
    environ = copy;
    /* Up to 16 bytes past the arguments' room, as far as the first environment string
     * reaches (leaving its last byte for the NUL). */
    size_t extra = more - 1 < 16 ? more - 1 : 16;
    if (extra < 2) {
        printf("first environment string too short\n");
        return 1;
    }
    size_t len = room + extra;
    memset(start, 'w', len);
    memcpy(start, "title: worker ", 14);
    start[len] = 0;
    child_reads_parent("long title");
    show("own long title", getpid());

    /* A forked child's own title, read by its parent while the child waits. */
    int ready[2], go[2];
    if (pipe(ready) || pipe(go)) {
        perror("pipe");
        return 1;
    }
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        memset(start, 0, len + 1);
        snprintf(start, room, "title: child");
        char b = 'r';
        if (write(ready[1], &b, 1) != 1 || read(go[0], &b, 1) != 1)
            _exit(1);
        _exit(0);
    }
    char b;
    if (c < 0 || read(ready[0], &b, 1) != 1) {
        printf("no child\n");
        return 1;
    }
    show("child's title", c);
    if (write(go[1], &b, 1) != 1 || waitpid(c, NULL, 0) != c) {
        printf("child lost\n");
        return 1;
    }
    printf("done\n");
    return 0;
}
