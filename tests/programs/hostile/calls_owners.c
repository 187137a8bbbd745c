// chown, fchown, lchown, fchownat, statfs, fstatfs, getgroups (issue 10), with good and bad
// arguments.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "report.h"

int main(void) {
    char dir[] = "/tmp/hrt-calls-own-XXXXXX";
    if (!mkdtemp(dir) || chdir(dir))
        return 1;
    int fd = open("f", O_CREAT | O_WRONLY, 0600);
    symlink("f", "s");
    report("chown to self", chown("f", getuid(), getgid()));
    report("chown keep both", chown("f", -1, -1));
    report("chown missing", chown("nope", -1, -1));
    report("chown to uid 0 (EPERM unless root)", chown("f", 0, -1) == 0 && getuid() != 0 ? -2 : 0);
    report("lchown the link", lchown("s", getuid(), getgid()));
    report("fchown", fchown(fd, -1, getgid()));
    report("fchown bad fd", fchown(999, -1, -1));
    report("fchownat nofollow", fchownat(AT_FDCWD, "s", -1, -1, AT_SYMLINK_NOFOLLOW));
    report("fchownat bad flags", fchownat(AT_FDCWD, "s", -1, -1, 0x12345));
    report("chown bad path pointer", syscall(SYS_chown, (char *)16, -1, -1));
    struct statfs a, b;
    report("statfs .", statfs(".", &a));
    report("fstatfs", fstatfs(fd, &b));
    printf("same fs type %d, bsize %ld, namelen %ld\n", a.f_type == b.f_type, (long)a.f_bsize, (long)a.f_namelen);
    report("statfs bad buffer", syscall(SYS_statfs, ".", (void *)16));
    report("fstatfs bad fd", fstatfs(999, &b));
    int n = getgroups(0, NULL);
    report("getgroups count", n);
    gid_t *g = calloc(n + 1, sizeof *g);
    report("getgroups list", getgroups(n, g));
    long sum = 0;
    for (int i = 0; i < n; i++)
        sum += g[i];
    printf("groups sum %ld\n", sum);
    if (n > 0)
        report("getgroups too small", getgroups(n - 1, g));
    report("getgroups negative", syscall(SYS_getgroups, -1, g));
    report("getgroups bad list", syscall(SYS_getgroups, n, (void *)16));
    unlink("s");
    unlink("f");
    chdir("/");
    rmdir(dir);
    return 0;
}
