// uname answers what the host's does (as a container shows it), field by field; sethostname
// and setdomainname are the host's (they were ENOSYS): Linux's checks (EINVAL above 64 bytes,
// EFAULT), and setting the names they already have succeeds as root and changes nothing
// (uname after them answers the same). Not root: EPERM first, natively and under hrt alike.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

static void show(const char *what, int r) {
    printf("%s: %d %s\n", what, r, r < 0 ? strerror(errno) : "");
}

static void print(void) {
    struct utsname u;
    if (uname(&u) != 0) {
        perror("uname");
        return;
    }
    printf("sysname=%s\nnodename=%s\nrelease=%s\nversion=%s\nmachine=%s\ndomainname=%s\n", u.sysname, u.nodename,
           u.release, u.version, u.machine, u.domainname);
}

int main(void) {
    print();
    struct utsname u;
    uname(&u);
    char long_name[80];
    memset(long_name, 'x', sizeof long_name);
    show("sethostname, 65 bytes", sethostname(long_name, 65));
    show("sethostname, bad pointer", (int)syscall(SYS_sethostname, 8, 4));
    show("sethostname, its own name", sethostname(u.nodename, strlen(u.nodename)));
    show("setdomainname, 65 bytes", setdomainname(long_name, 65));
    show("setdomainname, its own name", setdomainname(u.domainname, strlen(u.domainname)));
    print();
    return 0;
}
