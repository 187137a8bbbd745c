/* The set-id calls after capset dropped CAP_SETUID and CAP_SETGID answer EPERM (hrt died of
 * SIGABRT: glibc's set-id broadcast over hrt's threads got different answers from threads
 * that had not taken the capability change yet), and with the capabilities they change the
 * ids, after which the process is no longer dumpable (PR_GET_DUMPABLE 0; hrt kept 1). Each case
 * in a forked child (as root on the host: the program starts with them). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

struct cap_header {
    unsigned version;
    int pid;
};
struct cap_data {
    unsigned effective, permitted, inheritable;
};

static void drop(int cap) {
    struct cap_header h = {0x20080522, 0};
    struct cap_data d[2];
    syscall(SYS_capget, &h, d);
    d[0].effective &= ~(1u << cap);
    d[0].permitted &= ~(1u << cap);
    syscall(SYS_capset, &h, d);
}

int main(void) {
    if (geteuid() != 0) {
        printf("not root: nothing to check\n");
        return 0;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *names[] = {"setuid", "setreuid", "setresuid", "setgid", "setregid", "setresgid"};
    long nrs[] = {SYS_setuid, SYS_setreuid, SYS_setresuid, SYS_setgid, SYS_setregid, SYS_setresgid};
    for (int i = 0; i < 6; i++) {
        pid_t c = fork();
        if (c == 0) {
            drop(i < 3 ? 7 : 6); /* CAP_SETUID, CAP_SETGID */
            errno = 0;
            long r = syscall(nrs[i], 65534, 65534, 65534);
            printf("%s without the capability: %ld (%s)\n", names[i], r, strerror(errno));
            _exit(0);
        }
        int st;
        waitpid(c, &st, 0);
        if (!WIFEXITED(st))
            printf("%s without the capability: the child died of signal %d\n", names[i], WTERMSIG(st));
    }
    pid_t c = fork();
    if (c == 0) {
        int before = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
        long r = syscall(SYS_setresgid, 65534, 65534, 65534) | syscall(SYS_setresuid, 65534, 65534, 65534);
        printf("setresgid and setresuid with the capabilities: %ld, now uid %d gid %d, dumpable %d then %d\n", r,
               (int)getuid(), (int)getgid(), before, prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
        _exit(0);
    }
    waitpid(c, NULL, 0);
    return 0;
}
