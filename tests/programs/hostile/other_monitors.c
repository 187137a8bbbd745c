// Other `hrt` processes the program can name must be out of its reach as its own monitor is: the
// monitor of its parent (seen from a forked child), of its child (seen from the parent), and
// the helper that holds the VM until the monitor has ended (found as the holder of a pidfd of
// the program's process). Each case prints "refused" or "REACHED" (a defect under hrt);
// what `ps` reads of a child or parent (status, cmdline, stat) stays readable ("readable").
// Meant for `hrt run` only: natively the same processes are ordinary ones the test may reach.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

static void try_open(const char *who, pid_t pid, const char *entry, int flags) {
    char path[128];
    snprintf(path, sizeof path, "/proc/%d/%s", pid, entry);
    int fd = open(path, flags);
    printf("%s %s: %s\n", who, entry, fd >= 0 ? "REACHED" : "refused");
    if (fd >= 0)
        close(fd);
}

static void readable(const char *who, pid_t pid, const char *entry) {
    char path[128], buf[64];
    snprintf(path, sizeof path, "/proc/%d/%s", pid, entry);
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
    printf("%s %s: %s\n", who, entry, n > 0 ? "readable" : "not readable");
    if (fd >= 0)
        close(fd);
}

// The entries that would give a monitor away, and those that must stay readable.
static void probe(const char *who, pid_t pid) {
    try_open(who, pid, "mem", O_RDWR);
    try_open(who, pid, "mem", O_RDONLY);
    try_open(who, pid, "environ", O_RDONLY);
    try_open(who, pid, "maps", O_RDONLY);
    try_open(who, pid, "auxv", O_RDONLY);
    try_open(who, pid, "fd", O_RDONLY | O_DIRECTORY);
    try_open(who, pid, "fd/3", O_RDONLY);
    try_open(who, pid, "coredump_filter", O_RDWR);
    char task[64];
    snprintf(task, sizeof task, "task/%d/mem", pid);
    try_open(who, pid, task, O_RDONLY);
    readable(who, pid, "status");
    readable(who, pid, "cmdline");
    readable(who, pid, "stat");
}

// Processes that hold a pidfd of this process (pidfd fdinfo: "Pid:\t<pid>"): under hrt, the
// helper that holds the VM until the monitor has ended. The number of their descriptors the
// program could read (a KVM one among them: the VM).
static int pidfd_holders_reached(void) {
    int found = 0;
    char want[32];
    snprintf(want, sizeof want, "Pid:\t%d\n", getpid());
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9' || atoi(e->d_name) == getpid())
            continue;
        char path[300], buf[512];
        snprintf(path, sizeof path, "/proc/%s/fdinfo", e->d_name);
        DIR *fds = opendir(path);
        struct dirent *f;
        while (fds && (f = readdir(fds))) {
            snprintf(path, sizeof path, "/proc/%s/fdinfo/%s", e->d_name, f->d_name);
            int fd = open(path, O_RDONLY);
            ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
            if (fd >= 0)
                close(fd);
            if (n > 0) {
                buf[n] = 0;
                if (strstr(buf, want))
                    found++;
            }
        }
        if (fds)
            closedir(fds);
    }
    if (d)
        closedir(d);
    return found;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int up[2], down[2];
    if (pipe(up) || pipe(down))
        return 1;
    pid_t child = fork();
    if (child == 0) {
        probe("parent's", getppid());
        printf("holders of a pidfd of the child reached: %d\n", pidfd_holders_reached());
        char c = 1;
        write(up[1], &c, 1);
        read(down[0], &c, 1);
        _exit(0);
    }
    char c;
    read(up[0], &c, 1);
    probe("child's", child);
    printf("holders of a pidfd of the parent reached: %d\n", pidfd_holders_reached());
    write(down[1], &c, 1);
    int st;
    waitpid(child, &st, 0);
    printf("other monitors: done\n");
    return 0;
}
