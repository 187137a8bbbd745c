// User and group ids: the get calls, and set calls that keep each id as it is (GNU make sets
// its effective ids to their own values before it runs a command), plus a bad pointer.
// Compared with the native run (the program runs as the user who started it).
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void show(const char *what, int r) {
    printf("%-28s %s\n", what, r == 0 ? "0" : strerror(errno));
}

int main(void) {
    uid_t r, e, s;
    gid_t gr, ge, gs;
    show("getresuid", getresuid(&r, &e, &s));
    show("getresgid", getresgid(&gr, &ge, &gs));
    printf("same as getuid/geteuid: %d %d\n", r == getuid() && e == geteuid() && s == geteuid(),
           gr == getgid() && ge == getegid() && gs == getegid());
    show("setresuid(-1, euid, -1)", setresuid(-1, geteuid(), -1));
    show("setresgid(-1, egid, -1)", setresgid(-1, getegid(), -1));
    show("setresuid(-1, -1, -1)", setresuid(-1, -1, -1));
    show("setreuid(uid, euid)", setreuid(getuid(), geteuid()));
    show("setregid(-1, -1)", setregid(-1, -1));
    show("seteuid(euid)", seteuid(geteuid()));
    show("setegid(egid)", setegid(getegid()));
    show("setuid(uid)", setuid(getuid()));
    show("setgid(gid)", setgid(getgid()));
    show("getresuid, bad pointer", getresuid((uid_t *)8, &e, &s));
    // setgroups: the list the program has (EPERM without CAP_SETGID, as natively), too long.
    gid_t groups[256];
    int n = getgroups(256, groups);
    printf("getgroups %d\n", n);
    show("setgroups(own list)", setgroups(n, groups));
    show("setgroups(70000)", setgroups(70000, groups));
    return 0;
}
