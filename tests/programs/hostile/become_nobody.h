/* For tests of what a program does after it dropped root: a program not run as root prints
 * "needs root" (the test then has nothing to compare); otherwise it drops its supplementary
 * groups and becomes nobody (uid and gid 65534). Returns 0 once nobody, 1 (with the reason on
 * stderr) where dropping failed, -1 when not root: main returns `ret < 0 ? 0 : ret` early. */
#ifndef BECOME_NOBODY_H
#define BECOME_NOBODY_H
#include <grp.h>
#include <stdio.h>
#include <unistd.h>

static int become_nobody(void) {
    if (geteuid() != 0) {
        printf("needs root\n");
        return -1;
    }
    if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) {
        perror("dropping root");
        return 1;
    }
    return 0;
}
#endif
