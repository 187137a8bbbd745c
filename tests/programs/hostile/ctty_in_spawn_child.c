/* A vfork child that becomes a session leader and takes a pseudo-terminal as its controlling
 * terminal before its exec (Go's SysProcAttr Setsid + Setctty; os/signal TestTerminalSignal):
 * the exec'd program has the terminal as its controlling one (/dev/tty opens, its session is
 * the terminal's). Before the setsid TIOCSCTTY is EPERM, on a file ENOTTY. Under hrt the
 * child's ioctl was made in `hrt`'s process, which leads no session: EPERM. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc > 1) {
        /* The exec'd program: its controlling terminal is the one at 0. */
        int tty = open("/dev/tty", O_RDWR);
        printf("exec'd: /dev/tty opens: %s, the terminal's session is mine: %s\n", tty >= 0 ? "yes" : strerror(errno),
               tcgetsid(0) == getsid(0) ? "yes" : "no");
        return 0;
    }
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) || unlockpt(master))
        return 1;
    int slave = open(ptsname(master), O_RDWR | O_NOCTTY);
    int file = open("/proc/self/exe", O_RDONLY);
    if (slave < 0 || file < 0)
        return 2;
    fflush(stdout);
    static volatile int before_setsid, on_file, after;
    char *args[] = {argv[0], "exec'd", NULL};
    pid_t c = vfork();
    if (c == 0) {
        before_setsid = ioctl(slave, TIOCSCTTY, 0) == 0 ? 0 : errno;
        setsid();
        on_file = ioctl(file, TIOCSCTTY, 0) == 0 ? 0 : errno;
        after = ioctl(slave, TIOCSCTTY, 0) == 0 ? 0 : errno;
        dup2(slave, 0);
        execv(argv[0], args);
        _exit(3);
    }
    int status;
    waitpid(c, &status, 0);
    printf("TIOCSCTTY before setsid: %s\n", before_setsid ? strerror(before_setsid) : "ok");
    printf("TIOCSCTTY on a file: %s\n", on_file ? strerror(on_file) : "ok");
    printf("TIOCSCTTY after setsid: %s\n", after ? strerror(after) : "ok");
    printf("ctty in spawn child: done, status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
