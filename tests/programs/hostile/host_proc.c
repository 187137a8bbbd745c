// The monitor's own /proc entries must be out of the program's reach, however the path is
// spelled. Natively, /proc/self is the program itself; under hrt it would be the monitor, so
// each case prints "own" (the program's own memory was read: natively), "refused" (under hrt),
// or "FOREIGN" (something that is not the program's own memory or file was reached: a defect).
// The other processes probed are the program's parent (under hrt: the monitor) and ids after it
// (the monitor's vCPU threads); natively they are the test runner, which "refused" or "other"
// describes without touching it.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static volatile unsigned long marker = 0x5a17ed5eed5a17edul;

// Opens `path` (relative to `dirfd`) read-write or read-only and says whose memory it shows.
static const char *mem_case(int dirfd, const char *path) {
    int fd = openat(dirfd, path, O_RDWR);
    if (fd < 0)
        fd = openat(dirfd, path, O_RDONLY);
    if (fd < 0)
        return "refused";
    unsigned long v = 0;
    ssize_t n = pread(fd, &v, sizeof v, (off_t)(unsigned long)&marker);
    close(fd);
    return n == (ssize_t)sizeof v && v == marker ? "own" : "FOREIGN";
}

static int is_kvm(int fd) {
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && major(st.st_rdev) == 10 && minor(st.st_rdev) == 232;
}

// The thread-group id of task `p`, 0 if its status cannot be read.
static int tgid(pid_t p) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", p);
    FILE *f = fopen(path, "r");
    int t = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Tgid: %d", &t) == 1)
            break;
    if (f)
        fclose(f);
    return t;
}

int main(int argc, char **argv) {
    char path[256];
    printf("self/mem: %s\n", mem_case(AT_FDCWD, "/proc/self/mem"));
    int root = open("/", O_RDONLY | O_DIRECTORY);
    printf("openat(/, proc/self/mem): %s\n", mem_case(root, "proc/self/mem"));
    int proc = open("/proc", O_RDONLY | O_DIRECTORY);
    printf("openat(/proc, self/mem): %s\n", mem_case(proc, "self/mem"));
    printf("self/cwd/proc/self/mem: %s\n", mem_case(AT_FDCWD, "/proc/self/cwd/proc/self/mem"));
    printf("self/root/proc/self/mem: %s\n", mem_case(AT_FDCWD, "/proc/self/root/proc/self/mem"));
    printf("thread-self/mem: %s\n", mem_case(AT_FDCWD, "/proc/thread-self/mem"));
    printf("self/task/../mem: %s\n", mem_case(AT_FDCWD, "/proc/self/task/../mem"));
    snprintf(path, sizeof path, "/proc/%d/mem", getpid());
    printf("/proc/getpid()/mem: %s\n", mem_case(AT_FDCWD, path));
    // Symbolic links made by the test (argv[1] is their directory): DIR/mem -> /proc/self/mem,
    // DIR/p -> /proc/self, DIR/proc -> /proc.
    if (argc > 1) {
        snprintf(path, sizeof path, "%s/mem", argv[1]);
        printf("link to self/mem: %s\n", mem_case(AT_FDCWD, path));
        snprintf(path, sizeof path, "%s/p/mem", argv[1]);
        printf("link to self, /mem: %s\n", mem_case(AT_FDCWD, path));
        snprintf(path, sizeof path, "%s/proc/self/net/../mem", argv[1]);
        printf("link to /proc, self/net/../mem: %s\n", mem_case(AT_FDCWD, path));
    }
    // chdir into it, then relative.
    int back = open(".", O_RDONLY | O_DIRECTORY);
    if (chdir("/proc/self") == 0) {
        printf("chdir self, mem: %s\n", mem_case(AT_FDCWD, "mem"));
        fchdir(back);
    } else {
        printf("chdir self, mem: refused\n");
    }
    // A descriptor of the directory itself (ps stats /proc/<its pid>; a program may list it):
    // every lookup through it is judged again.
    char path0[64];
    snprintf(path0, sizeof path0, "/proc/%d", getpid());
    struct stat dst;
    printf("stat /proc/getpid() is a directory: %s\n", stat(path0, &dst) == 0 && S_ISDIR(dst.st_mode) ? "yes" : "no");
    int selfdir = open("/proc/self", O_RDONLY | O_DIRECTORY);
    printf("open /proc/self as a directory: %s\n", selfdir >= 0 ? "yes" : "no");
    printf("openat(self dir, mem): %s\n", mem_case(selfdir, "mem"));
    printf("openat(self dir, task/../mem): %s\n", mem_case(selfdir, "task/../mem"));
    printf("openat(self dir, ./mem): %s\n", mem_case(selfdir, "./mem"));
    if (selfdir >= 0)
        close(selfdir);
    // Our pid and the ids after it: under hrt, the program's pid is the monitor's, and the
    // ids after it its threads (natively: this program, whose memory is its own).
    int foreign = 0, kvm = 0;
    pid_t ppid = getpid();
    for (pid_t p = ppid; p < ppid + 64; p++) {
        snprintf(path, sizeof path, "/proc/%d/mem", p);
        const char *r = mem_case(AT_FDCWD, path);
        // Natively the parent is the test runner: its memory is not ours either, but reaching
        // it is the host's ptrace policy; only count what succeeds *and* reads our marker's
        // address (the monitor maps guest memory elsewhere, so under hrt that cannot be "own").
        if (strcmp(r, "FOREIGN") == 0 && p != ppid)
            foreign++;
        // Only the parent's own threads (other processes of the same user are the host's
        // policy, and other tests run beside this one): skip ids whose Tgid is someone else's.
        if (p != ppid && tgid(p) > 0 && tgid(p) != ppid)
            continue;
        for (int n = 0; n < 32; n++) {
            snprintf(path, sizeof path, "/proc/%d/fd/%d", p, n);
            // O_PATH first: natively this never reopens another process's files for I/O.
            int fd = open(path, O_PATH);
            if (fd >= 0 && is_kvm(fd)) {
                int again = open(path, O_RDWR);
                // A process that appeared meanwhile (another test's) is not the parent's.
                int t = tgid(p);
                if (again >= 0 && !(p != ppid && t > 0 && t != ppid)) {
                    fprintf(stderr, "reopened KVM through %s\n", path);
                    kvm++;
                }
                if (again >= 0)
                    close(again);
            }
            if (fd >= 0)
                close(fd);
        }
    }
    printf("kvm reopened through /proc: %d\n", kvm);
    // The program's own view: cmdline is its argv.
    char buf[4096];
    int fd = open("/proc/self/cmdline", O_RDONLY);
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf);
    size_t want = 0;
    for (int i = 0; i < argc; i++)
        want += strlen(argv[i]) + 1;
    int same = n == (ssize_t)want;
    for (int i = 0, at = 0; same && i < argc; at += strlen(argv[i]) + 1, i++)
        same = strcmp(buf + at, argv[i]) == 0;
    printf("cmdline is argv: %s\n", same ? "yes" : "no");
    close(fd);
    fd = open("/proc/self/comm", O_RDONLY);
    n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    printf("comm is the program's name: %s\n", strncmp(buf, base, strlen(base) < 15 ? strlen(base) : 15) == 0 ? "yes" : "no");
    FILE *st = fopen("/proc/self/status", "r");
    int named = 0;
    while (st && fgets(buf, sizeof buf, st))
        if (strncmp(buf, "Name:\t", 6) == 0)
            named = strncmp(buf + 6, base, 15) == 0 || strncmp(buf + 6, base, strlen(buf + 6) - 1) == 0;
    printf("status Name is the program's: %s\n", named ? "yes" : "no");
    // Pid and PPid are the program's own (ps reads them there).
    char want_pid[64];
    snprintf(want_pid, sizeof want_pid, "Pid:\t%d\nPPid:\t%d\n", getpid(), getppid());
    int pids = 0;
    if (st) {
        rewind(st);
        char prev[4096] = "";
        while (fgets(buf, sizeof buf, st)) {
            char two[8192];
            snprintf(two, sizeof two, "%s%s", prev, buf);
            if (strcmp(two, want_pid) == 0)
                pids = 1;
            snprintf(prev, sizeof prev, "%s", buf);
        }
    }
    printf("status Pid and PPid are the program's: %s\n", pids ? "yes" : "no");
    FILE *maps = fopen("/proc/self/maps", "r");
    unsigned long lo, hi;
    int covers = 0;
    while (maps && fgets(buf, sizeof buf, maps))
        if (sscanf(buf, "%lx-%lx", &lo, &hi) == 2 && lo <= (unsigned long)&marker && (unsigned long)&marker < hi)
            covers = 1;
    printf("maps covers the program's data: %s\n", covers ? "yes" : "no");
    (void)foreign;
    return 0;
}
