// uname answers what the host's does (as a container shows it), field by field.
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/utsname.h>

int main(void) {
    struct utsname u;
    if (uname(&u) != 0) {
        perror("uname");
        return 1;
    }
    printf("sysname=%s\nnodename=%s\nrelease=%s\nversion=%s\nmachine=%s\ndomainname=%s\n", u.sysname, u.nodename,
           u.release, u.version, u.machine, u.domainname);
    return 0;
}
