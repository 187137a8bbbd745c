/* chroot's refusals, as Linux makes them before it changes the root (which this program never
 * lets it do): a missing directory, a file, an empty path, a bad pointer, and, in a child
 * that dropped CAP_SYS_CHROOT, EPERM for a real directory. hrt answered ENOSYS to all. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "drop_cap.h"

static void show(const char *what, long r) {
    printf("%-36s %ld %s\n", what, r, r < 0 ? strerror(errno) : "");
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    show("chroot of a missing directory", syscall(SYS_chroot, "/nonexistent-dir"));
    show("chroot of a file", syscall(SYS_chroot, "/etc/passwd"));
    show("chroot below a file", syscall(SYS_chroot, "/etc/passwd/x"));
    show("chroot of an empty path", syscall(SYS_chroot, ""));
    show("chroot, bad pointer", syscall(SYS_chroot, (char *)8));
    pid_t c = fork();
    if (c == 0) {
        show("capset without CAP_SYS_CHROOT", drop_effective_capability(CAP_SYS_CHROOT));
        show("chroot /tmp, no capability", syscall(SYS_chroot, "/tmp"));
        show("chroot of a missing one, no capability", syscall(SYS_chroot, "/nonexistent-dir"));
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    printf("child status %d\n", st);
    return 0;
}
