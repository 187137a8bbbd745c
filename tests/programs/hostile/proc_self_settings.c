// The program's own /proc settings that are its host process's (`hrt`'s) too: the OOM score
// and its adjustment (read, raised, read back: redis writes oom_score_adj), the audit login id
// and session, the core-dump filter, the timer slack, the user namespace's maps and setgroups,
// and the I/O counters; they read as natively (they were EACCES under hrt).
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void show(const char *name) {
    char path[64], buf[256] = {0};
    snprintf(path, sizeof path, "/proc/self/%s", name);
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        printf("%-16s cannot open\n", name);
        return;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0) {
        printf("%-16s cannot read\n", name);
        return;
    }
    if (strcmp(name, "io") == 0) {
        printf("%-16s has rchar: %d\n", name, strstr(buf, "rchar:") != NULL);
        return;
    }
    if (strcmp(name, "oom_score") == 0) {
        printf("%-16s a number: %d\n", name, buf[0] >= '0' && buf[0] <= '9');
        return;
    }
    for (char *c = buf; *c; c++)
        if (*c == '\n') *c = '|';
    printf("%-16s %s\n", name, buf);
}

static void put(const char *name, const char *text) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/%s", name);
    int fd = open(path, O_WRONLY);
    ssize_t n = fd < 0 ? -1 : write(fd, text, strlen(text));
    if (fd >= 0) close(fd);
    printf("%-16s write %s: %s\n", name, text, n == (ssize_t)strlen(text) ? "ok" : "failed");
}

int main(void) {
    const char *names[] = {"oom_score_adj", "oom_adj", "oom_score", "loginuid", "sessionid", "coredump_filter",
                           "setgroups", "uid_map", "gid_map", "io"};
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) show(names[i]);
    put("oom_score_adj", "7");
    show("oom_score_adj");
    put("coredump_filter", "0x23");
    show("coredump_filter");
    put("timerslack_ns", "60000");
    show("timerslack_ns");
    return 0;
}
