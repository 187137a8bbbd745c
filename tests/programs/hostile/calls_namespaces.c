// Namespaces asked for without the privilege they need, as on Linux (LTP's clone11 and
// unshare02): after giving up root (if it had it), unshare and clone of every namespace kind
// but a user namespace fail with EPERM, and unshare of a flag it does not know with EINVAL,
// where HRT said ENOSYS for all of them (it provides no namespaces: with the privilege the
// calls still fail loudly with ENOSYS).
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHOW_WIDTH 40
#include "show.h"

int main(void) {
    if (getuid() == 0 && setuid(65534) != 0) {
        perror("setuid");
        return 1;
    }
    show("unshare(-1)", unshare(-1));
    show("unshare(0x1) (not an unshare flag)", unshare(0x1));
    const struct {
        const char *name;
        int flag;
    } kinds[] = {{"CLONE_NEWNS", CLONE_NEWNS},   {"CLONE_NEWUTS", CLONE_NEWUTS},
                 {"CLONE_NEWIPC", CLONE_NEWIPC}, {"CLONE_NEWNET", CLONE_NEWNET},
                 {"CLONE_NEWPID", CLONE_NEWPID}, {"CLONE_NEWCGROUP", CLONE_NEWCGROUP}};
    for (unsigned i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        char what[64];
        snprintf(what, sizeof what, "unshare(%s)", kinds[i].name);
        show(what, unshare(kinds[i].flag));
        snprintf(what, sizeof what, "clone(%s | SIGCHLD)", kinds[i].name);
        long pid = syscall(SYS_clone, kinds[i].flag | SIGCHLD, 0, 0, 0, 0);
        if (pid == 0)
            _exit(0);
        if (pid > 0)
            waitpid(pid, NULL, 0);
        show(what, pid > 0 ? 0 : pid);
    }
    show("unshare(CLONE_FILES) (no namespace)", unshare(CLONE_FILES));
    printf("namespaces: done\n");
    return 0;
}
