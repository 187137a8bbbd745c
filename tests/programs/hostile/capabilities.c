/* capset as on Linux: its checks (version, pid, pointers, no raising of the permitted set) and
 * its effects: without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH in the effective set root
 * cannot open a file of mode 000 (EACCES), and can again once it raises them from the
 * permitted set; a forked child and /proc/self/status show the sets the program left.
 * hrt answered ENOSYS (ping: "cap_set_proc: Function not implemented", exit 2). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static long capget_(struct __user_cap_header_struct *h, struct __user_cap_data_struct *d) {
    return syscall(SYS_capget, h, d);
}

static long capset_(struct __user_cap_header_struct *h, struct __user_cap_data_struct *d) {
    return syscall(SYS_capset, h, d);
}

static void get(struct __user_cap_data_struct d[2]) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    if (capget_(&h, d) != 0) {
        perror("capget");
        exit(1);
    }
}

static const char *err(long r) {
    return r == 0 ? "0" : strerror(errno);
}

/* The status line `key` of /proc/self/status. */
static void status_line(const char *who, const char *key) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, strlen(key)) == 0)
            printf("%s: %s", who, line);
    if (f)
        fclose(f);
}

static void try_open(const char *what, const char *path) {
    int fd = open(path, O_RDONLY);
    printf("%s: open of a mode-000 file: %s\n", what, fd >= 0 ? "0" : strerror(errno));
    if (fd >= 0)
        close(fd);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct __user_cap_header_struct h;
    struct __user_cap_data_struct d[2];
    get(d);

    /* The checks. */
    h.version = 0x12345678;
    h.pid = 0;
    long r = capset_(&h, d);
    printf("unknown version: %s, version now %#x\n", err(r), h.version);
    h.version = _LINUX_CAPABILITY_VERSION_3;
    h.pid = 1;
    printf("another process: %s\n", err(capset_(&h, d)));
    h.pid = 0;
    printf("unreadable data: %s\n", err(capset_(&h, (void *)8)));
    printf("unreadable header: %s\n", err(capset_((void *)8, d)));
    h.pid = getpid();
    printf("own pid, same sets: %s\n", err(capset_(&h, d)));
    h.pid = 0;

    char path[] = "/tmp/hrt-capsXXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    close(fd);
    chmod(path, 0);
    try_open("all sets as started", path);

    /* Lower the effective set (the permitted one keeps them). */
    const unsigned dac = 1u << CAP_DAC_OVERRIDE | 1u << CAP_DAC_READ_SEARCH;
    get(d);
    int had = (d[0].effective & dac) == dac;
    d[0].effective &= ~dac;
    printf("effective without DAC: %s\n", err(capset_(&h, d)));
    try_open("effective without DAC", path);
    get(d);
    printf("capget: DAC effective %d, permitted %d\n", (d[0].effective & dac) != 0, (d[0].permitted & dac) == (had ? dac : 0));
    d[0].effective |= had ? dac : 0;
    printf("effective with DAC again: %s\n", err(capset_(&h, d)));
    try_open("effective with DAC again", path);

    /* Drop them from the permitted set: no way back. */
    get(d);
    d[0].effective &= ~dac;
    d[0].permitted &= ~dac;
    printf("permitted without DAC: %s\n", err(capset_(&h, d)));
    d[0].permitted |= dac;
    d[0].effective |= dac;
    printf("raising the permitted set: %s\n", err(capset_(&h, d)));
    try_open("permitted without DAC", path);
    status_line("parent", "CapEff");
    status_line("parent", "CapPrm");

    pid_t child = fork();
    if (child == 0) {
        get(d);
        printf("forked child: DAC permitted %d\n", (d[0].permitted & dac) != 0);
        try_open("forked child", path);
        status_line("forked child", "CapPrm");
        _exit(0);
    }
    int st;
    waitpid(child, &st, 0);
    unlink(path);
    return 0;
}
