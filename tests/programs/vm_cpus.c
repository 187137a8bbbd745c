/* Prints what the program sees of the CPUs in the directories and /proc files that list them:
 * the entries of /sys/devices/system/cpu and /sys/devices/system/node (sorted), for each cpuN
 * entry whether it can be stat'ed (same inode as listed), listed and read below it (relative to
 * the directory's descriptor), whether getdents64 resumes and rewinds as Linux's does, the
 * same seen from inside the CPU directory (relative paths), the per-CPU fields of /proc/cpuinfo
 * node 0's directory (its cpuN links, their targets, read through them; its meminfo against
 * sysinfo), the caller's cgroup cpuset, a PCI device's CPUs, and the cpuN lines of /proc/stat. Under `hrt run --cpus N`
 * all of it describes N vCPUs (monitor/tests/omp_kernel.rs checks it). */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

struct entry {
    char name[256];
    unsigned long ino;
};

static int by_name(const void *a, const void *b) {
    return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* The entries of `path` except "." and "..", sorted; their count. */
static int list(const char *path, struct entry *out, int max) {
    DIR *d = opendir(path);
    if (!d) {
        printf("opendir %s failed\n", path);
        return 0;
    }
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(out[n].name, sizeof out[n].name, "%s", e->d_name);
            out[n++].ino = e->d_ino;
        }
    }
    closedir(d);
    qsort(out, n, sizeof *out, by_name);
    return n;
}

static void print_list(const char *label, struct entry *e, int n) {
    printf("%s:", label);
    for (int i = 0; i < n; i++)
        printf(" %s", e[i].name);
    printf("\n");
}

/* Each cpuN entry: a directory whose inode is the listed one, with topology entries, and its
 * core_id read relative to the CPU directory's descriptor. */
static void check_cpus(struct entry *e, int n) {
    int dir = open("/sys/devices/system/cpu", O_RDONLY | O_DIRECTORY);
    for (int i = 0; i < n; i++) {
        int num;
        char rest;
        if (sscanf(e[i].name, "cpu%d%c", &num, &rest) != 1)
            continue;
        struct stat st;
        int is_dir = fstatat(dir, e[i].name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        char path[600], id[32] = "";
        snprintf(path, sizeof path, "/sys/devices/system/cpu/%.255s/topology", e[i].name);
        struct entry topo[64];
        int topo_n = list(path, topo, 64);
        snprintf(path, sizeof path, "%.255s/topology/core_id", e[i].name);
        int f = openat(dir, path, O_RDONLY);
        ssize_t len = f >= 0 ? read(f, id, sizeof id - 1) : -1;
        id[len > 0 ? len - 1 : 0] = 0;
        if (f >= 0)
            close(f);
        printf("%s: dir %d same inode %d topology entries %d core_id %s\n", e[i].name, is_dir,
               is_dir && st.st_ino == e[i].ino, topo_n, id);
    }
    close(dir);
}

/* Whether two getdents64 answers hold the same records (the bytes after a name's NUL are
 * padding that Linux leaves as they were). */
static int same_records(const char *a, long a_len, const char *b, long b_len) {
    if (a_len != b_len)
        return 0;
    for (long o = 0; o < a_len;) {
        unsigned short reclen = *(const unsigned short *)(a + o + 16);
        if (reclen < 20 || memcmp(a + o, b + o, 19) || strcmp(a + o + 19, b + o + 19))
            return 0;
        o += reclen;
    }
    return 1;
}

/* getdents64 with small buffers gives the same records as one large read, lseek(0) rewinds,
 * lseek to a record's d_off resumes after it, and a buffer too small for one record is EINVAL. */
static void check_getdents(void) {
    int fd = open("/sys/devices/system/cpu", O_RDONLY | O_DIRECTORY);
    static char whole[65536], part[65536], small[64];
    long total = syscall(SYS_getdents64, fd, whole, sizeof whole);
    long got = 0, n;
    lseek(fd, 0, SEEK_SET);
    int einval = syscall(SYS_getdents64, fd, small, 10) == -1;
    while ((n = syscall(SYS_getdents64, fd, small, sizeof small)) > 0 && got + n <= (long)sizeof part) {
        memcpy(part + got, small, n);
        got += n;
    }
    int pieces = total > 0 && same_records(whole, total, part, got);
    /* Resume after the second record. */
    unsigned short first = *(unsigned short *)(whole + 16);
    long long off2 = *(long long *)(whole + first + 8);
    unsigned short second = *(unsigned short *)(whole + first + 16);
    lseek(fd, off2, SEEK_SET);
    n = syscall(SYS_getdents64, fd, part, sizeof part);
    int resumed = same_records(part, n, whole + first + second, total - first - second);
    printf("getdents: pieces %d resume %d too small %d\n", pieces, resumed, einval);
    close(fd);
}

/* The per-CPU fields of each /proc/cpuinfo block, then the cpuN lines of /proc/stat. */
static void check_proc(void) {
    static const char *fields[] = {"processor", "physical id", "siblings", "core id", "cpu cores", "apicid",
                                   "initial apicid"};
    FILE *f = fopen("/proc/cpuinfo", "r");
    char line[4096];
    while (f && fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (line[0] == '\n') {
            printf("\n");
            continue;
        }
        if (!colon)
            continue;
        size_t key = colon - line;
        while (key > 0 && (line[key - 1] == '\t' || line[key - 1] == ' '))
            key--;
        for (unsigned i = 0; i < sizeof fields / sizeof *fields; i++)
            if (strlen(fields[i]) == key && !strncmp(line, fields[i], key))
                printf("cpuinfo %s=%ld ", fields[i], strtol(colon + 1, 0, 10));
    }
    if (f)
        fclose(f);
    f = fopen("/proc/stat", "r");
    printf("stat:");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "cpu", 3) && line[3] != ' ')
            printf(" %.*s", (int)strcspn(line, " "), line);
    printf("\n");
    if (f)
        fclose(f);
}

/* The same from inside the CPU directory: "." lists as the directory does, and each cpuN's
 * core_id read by a path relative to the working directory is N. */
static void check_cwd(struct entry *e, int n) {
    static struct entry here[1024];
    if (chdir("/sys/devices/system/cpu") != 0) {
        printf("cwd: chdir failed\n");
        return;
    }
    int m = list(".", here, 1024);
    int same = m == n;
    for (int i = 0; same && i < n; i++)
        same = !strcmp(e[i].name, here[i].name);
    int ids = 1;
    for (int i = 0; i < n; i++) {
        int num;
        char rest, path[300];
        if (sscanf(e[i].name, "cpu%d%c", &num, &rest) != 1)
            continue;
        snprintf(path, sizeof path, "%s/topology/core_id", e[i].name);
        FILE *f = fopen(path, "r");
        int id = -1;
        if (!f || fscanf(f, "%d", &id) != 1 || id != num)
            ids = 0;
        if (f)
            fclose(f);
    }
    printf("cwd: same listing %d core_ids %d\n", same, ids);
    if (chdir("/") != 0)
        printf("chdir / failed\n");
}

/* Inside the last CPU's own directory (a vCPU the host may lack): getcwd names it, files read
 * by relative paths are its own (core_id, and online, which every CPU but cpu0 has), and so
 * after a fchdir back to it and in a forked child. */
static void check_cpu_cwd(void) {
    char dir[64], cwd[256] = "", id[32] = "", online[32] = "";
    int last = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
    snprintf(dir, sizeof dir, "/sys/devices/system/cpu/cpu%d", last);
    if (chdir(dir) != 0 || !getcwd(cwd, sizeof cwd)) {
        printf("cpu cwd: chdir %s failed\n", dir);
        return;
    }
    int fd = open("topology/core_id", O_RDONLY);
    ssize_t len = fd >= 0 ? read(fd, id, sizeof id - 1) : -1;
    id[len > 0 ? len - 1 : 0] = 0;
    if (fd >= 0)
        close(fd);
    fd = open("online", O_RDONLY);
    len = fd >= 0 ? read(fd, online, sizeof online - 1) : -1;
    if (len > 0)
        online[len - 1] = 0;
    else
        strcpy(online, "none");
    if (fd >= 0)
        close(fd);
    int here = open(".", O_RDONLY | O_DIRECTORY);
    char back[256] = "";
    if (here < 0 || chdir("/") != 0 || fchdir(here) != 0 || !getcwd(back, sizeof back))
        strcpy(back, "failed");
    if (here >= 0)
        close(here);
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        char c[256] = "";
        _exit(getcwd(c, sizeof c) && !strcmp(c, dir) && access("topology/core_id", R_OK) == 0 ? 0 : 1);
    }
    int status = -1;
    waitpid(child, &status, 0);
    printf("cpu cwd: %s core_id %s online %s back %s child %s\n", cwd, id, online, back,
           WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "same" : "differs");
    if (chdir("/") != 0)
        printf("chdir / failed\n");
}

/* Node 0's directory: its entries, each cpuN link's target and the core_id read through it,
 * and whether its meminfo's MemTotal is sysinfo's total (to the kB). */
static void check_node0(void) {
    static struct entry e[1024];
    int n = list("/sys/devices/system/node/node0", e, 1024);
    printf("node0 cpus:");
    for (int i = 0; i < n; i++)
        if (!strncmp(e[i].name, "cpu", 3) && e[i].name[3] >= '0' && e[i].name[3] <= '9')
            printf(" %s", e[i].name);
    printf("\n");
    for (int i = 0; i < n; i++) {
        int num;
        char rest, path[600], target[256] = "", id[32] = "";
        if (sscanf(e[i].name, "cpu%d%c", &num, &rest) != 1)
            continue;
        snprintf(path, sizeof path, "/sys/devices/system/node/node0/%.255s", e[i].name);
        ssize_t len = readlink(path, target, sizeof target - 1);
        target[len > 0 ? len : 0] = 0;
        snprintf(path, sizeof path, "/sys/devices/system/node/node0/%.255s/topology/core_id", e[i].name);
        int f = open(path, O_RDONLY);
        len = f >= 0 ? read(f, id, sizeof id - 1) : -1;
        id[len > 0 ? len - 1 : 0] = 0;
        if (f >= 0)
            close(f);
        printf("node0/%s: link %s core_id %s\n", e[i].name, target, id);
    }
    FILE *f = fopen("/sys/devices/system/node/node0/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Node 0 MemTotal: %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    struct sysinfo si;
    sysinfo(&si);
    printf("node0 meminfo: MemTotal is sysinfo's %d\n", kb == (unsigned long long)si.totalram * si.mem_unit / 1024);
}

/* The CPUs of the caller's cgroup cpuset (v1: /proc/self/cpuset names it; v2: the "0::" line of
 * /proc/self/cgroup), or "none". */
static void check_cpuset(void) {
    char group[512] = "", path[1100], cpus[256] = "none";
    FILE *f = fopen("/proc/self/cpuset", "r");
    if (f && fgets(group, sizeof group, f)) {
        group[strcspn(group, "\n")] = 0;
        snprintf(path, sizeof path, "/sys/fs/cgroup/cpuset%s/cpuset.effective_cpus", group);
    } else {
        char line[600];
        FILE *c = fopen("/proc/self/cgroup", "r");
        while (c && fgets(line, sizeof line, c))
            if (!strncmp(line, "0::", 3)) {
                line[strcspn(line, "\n")] = 0;
                snprintf(group, sizeof group, "%s", line + 3);
            }
        if (c)
            fclose(c);
        snprintf(path, sizeof path, "/sys/fs/cgroup%s/cpuset.cpus.effective", group);
    }
    if (f)
        fclose(f);
    f = fopen(path, "r");
    if (f && fgets(cpus, sizeof cpus, f))
        cpus[strcspn(cpus, "\n")] = 0;
    if (f)
        fclose(f);
    printf("cpuset: %s\n", cpus);
}

/* The CPUs near the first PCI device (its local_cpulist, reached through /sys/bus/pci), or
 * "none" on a host without one. */
static void check_device(void) {
    char path[600], cpus[256] = "none";
    DIR *d = opendir("/sys/bus/pci/devices");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpulist", e->d_name);
            FILE *f = fopen(path, "r");
            if (f && fgets(cpus, sizeof cpus, f))
                cpus[strcspn(cpus, "\n")] = 0;
            if (f)
                fclose(f);
            break;
        }
    if (d)
        closedir(d);
    printf("device cpus: %s\n", cpus);
}

int main(void) {
    static struct entry cpus[1024], nodes[1024];
    int n = list("/sys/devices/system/cpu", cpus, 1024);
    print_list("cpu", cpus, n);
    print_list("node", nodes, list("/sys/devices/system/node", nodes, 1024));
    check_cpus(cpus, n);
    check_getdents();
    check_cwd(cpus, n);
    check_cpu_cwd();
    check_node0();
    check_cpuset();
    check_device();
    check_proc();
    return 0;
}
