// The flags a program sees on its descriptors: F_GETFL shows the open's status flags, never
// one hrt's own open added (O_NOFOLLOW, where the walk found no link); /proc/self/fdinfo's
// `flags:` line the same, with O_CLOEXEC where the descriptor has it.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

static void show(const char *what, int fd) {
    char path[64], line[128], info[64] = "(none)";
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", fd);
    FILE *f = fopen(path, "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "flags:", 6))
            snprintf(info, sizeof info, "%s", line + 6 + strspn(line + 6, "\t "));
    if (f)
        fclose(f);
    info[strcspn(info, "\n")] = 0;
    printf("%-28s F_GETFD %d F_GETFL 0%o fdinfo %s\n", what, fcntl(fd, F_GETFD), fcntl(fd, F_GETFL), info);
}

int main(void) {
    show("file", open("/etc/passwd", O_RDONLY));
    show("file, O_CLOEXEC", open("/etc/passwd", O_RDONLY | O_CLOEXEC));
    show("file, O_NOFOLLOW asked", open("/etc/passwd", O_RDONLY | O_NOFOLLOW));
    show("file, O_APPEND|O_WRONLY", open("/dev/null", O_WRONLY | O_APPEND));
    show("directory", open("/etc", O_RDONLY | O_DIRECTORY));
    show("O_PATH", open("/etc/passwd", O_PATH));
    int d = dup(open("/etc/hostname", O_RDONLY));
    show("dup of a file", d);
    int p[2];
    pipe2(p, O_NONBLOCK);
    show("pipe, O_NONBLOCK", p[0]);
    show("eventfd, EFD_CLOEXEC", eventfd(0, EFD_CLOEXEC));
    fcntl(p[1], F_SETFD, FD_CLOEXEC);
    show("pipe, FD_CLOEXEC set later", p[1]);
    printf("fd flags: done\n");
    return 0;
}
