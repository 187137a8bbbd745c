/* Paths through the program's own /proc/self/cwd and /proc/self/root links (and the same under
 * thread-self, the pid and task/<tid>): opens, stats and directory listings below them, the
 * lookups Linux refuses (a missing name, a thread that does not exist), and ELOOP once 40
 * links are followed (`self` counts as one). hrt answered EACCES to every path below them. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void try_open(const char *what, const char *p, int flags) {
    int fd = open(p, flags);
    printf("%-34s %s\n", what, fd >= 0 ? "ok" : strerrorname_np(errno));
    if (fd >= 0) close(fd);
}

static void read_file(const char *what, const char *p) {
    char buf[64] = {0};
    int fd = open(p, O_RDONLY);
    long n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    printf("%-34s %s\n", what, n >= 0 ? buf : strerrorname_np(errno));
    if (fd >= 0) close(fd);
}

/* How many repetitions of `unit` before a file can be opened through them. */
static void deepest(const char *what, const char *unit) {
    char path[4096];
    int last_ok = 0;
    for (int n = 1; n <= 45; n++) {
        path[0] = 0;
        for (int i = 0; i < n; i++) strcat(path, unit);
        strcat(path, dir);
        strcat(path, "/file");
        int fd = open(path, O_RDONLY);
        if (fd < 0) {
            printf("%-34s %d ok, then %s\n", what, last_ok, strerrorname_np(errno));
            return;
        }
        close(fd);
        last_ok = n;
    }
    printf("%-34s all 45 ok\n", what);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    char sub[128], file[128], p[256];
    snprintf(dir, sizeof dir, "/tmp/hrt-links-%d", getpid());
    snprintf(sub, sizeof sub, "%s/sub", dir);
    snprintf(file, sizeof file, "%s/file", dir);
    mkdir(dir, 0755);
    mkdir(sub, 0755);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "contents\n", 9) != 9) return 1;
    close(fd);
    if (chdir(sub)) return 1;

    read_file("cwd/../file", "/proc/self/cwd/../file");
    snprintf(p, sizeof p, "/proc/self/root%s", file);
    read_file("root/<dir>/file", p);
    read_file("thread-self/cwd/../file", "/proc/thread-self/cwd/../file");
    snprintf(p, sizeof p, "/proc/%d/cwd/../file", getpid());
    read_file("<pid>/cwd/../file", p);
    snprintf(p, sizeof p, "/proc/self/task/%d/root%s", gettid(), file);
    read_file("task/<tid>/root/...", p);
    try_open("task/<no such tid>/cwd/../file", "/proc/self/task/999999/cwd/../file", O_RDONLY);
    try_open("cwd (a directory)", "/proc/self/cwd", O_RDONLY | O_DIRECTORY);
    try_open("cwd/ (a directory)", "/proc/self/cwd/", O_RDONLY | O_DIRECTORY);
    try_open("root (a directory)", "/proc/self/root", O_RDONLY | O_DIRECTORY);
    try_open("cwd/missing", "/proc/self/cwd/missing", O_RDONLY);
    try_open("cwd/../file/ (not a directory)", "/proc/self/cwd/../file/", O_RDONLY);
    try_open("cwd/new (created)", "/proc/self/cwd/new", O_WRONLY | O_CREAT | O_EXCL);
    struct stat st;
    printf("%-34s %s\n", "stat cwd/new", stat("/proc/self/cwd/new", &st) ? strerrorname_np(errno) : "ok");
    printf("%-34s %s\n", "unlink cwd/new", unlink("/proc/self/cwd/new") ? strerrorname_np(errno) : "ok");
    DIR *d = opendir("/proc/self/cwd/..");
    int entries = 0;
    for (struct dirent *e; d && (e = readdir(d));) entries += e->d_name[0] != '.';
    printf("%-34s %d\n", "entries of cwd/..", entries);
    if (d) closedir(d);
    deepest("root links by self", "/proc/self/root");
    char unit[64];
    snprintf(unit, sizeof unit, "/proc/%d/root", getpid());
    deepest("root links by pid", unit);
    deepest("cwd then root links", "/proc/self/root/proc/self/cwd/../../..");
    unlink(file);
    rmdir(sub);
    rmdir(dir);
    printf("links done\n");
    return 0;
}
