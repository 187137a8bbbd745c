/* Terminal access from a background job (SIGTTIN, SIGTTOU), on a pseudo-terminal.
 *   sig_tty job CMD ARGS... - the job-control harness, a small shell: makes a session with a new
 *       pseudo-terminal as its controlling terminal (TOSTOP set), starts CMD in a process group
 *       of its own, in the background, with the terminal as stdin, and reports how it stops or
 *       ends. A stopped job is brought to the foreground (tcsetpgrp), given a line of input
 *       and continued (SIGCONT), as `fg` does.
 *   sig_tty job_term CMD ARGS... - the same harness, but a stopped job is sent SIGTERM and then
 *       SIGCONT, as bash's `kill %1` does to a stopped job: it must end (reported as a shell's
 *       status, 128 + signal for a killed job); stopped again, it is killed with SIGKILL.
 *   sig_tty MODE - the program: reads from (or writes to) the terminal, then reports on stdout
 *       (a pipe, not the terminal):
 *       read_dfl     - SIGTTIN's default action: stopped until in the foreground, then reads;
 *       read_ign     - SIGTTIN ignored: read fails with EIO at once;
 *       read_handler - a SIGTTIN handler (no SA_RESTART): it runs, read fails with EINTR;
 *       write_dfl    - write to /dev/tty with TOSTOP: SIGTTOU stops it until in the foreground;
 *       write_ign    - SIGTTOU ignored: the write goes through at once;
 *       write_blocked - SIGTTOU blocked: the write goes through at once;
 *       setattr_blocked - SIGTTOU blocked: tcsetattr of the terminal succeeds at once (bash's
 *                      jobs block it before they take the terminal; hrt stopped there).
 *       (Under hrt the monitor makes the call on the host: it blocks SIGTTOU while it does when
 *       the program's thread blocks it.)
 *       A SIGCONT handler (SA_RESTART) reports that it ran: once continued, the program waits
 *       up to 5 s for it (under hrt it comes through the monitor, a moment after the read may
 *       have completed). Without SA_RESTART, Linux would end the restarted read with EINTR for
 *       that handler; hrt, whose host call has already restarted, may complete it: not tested. */
#include <time.h>
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "handler.h"

static volatile sig_atomic_t ttin, cont;
static void on_ttin(int sig) { (void)sig; ttin++; }
static void on_cont(int sig) { (void)sig; cont++; }


// The modes that stop (read_dfl, write_dfl), once continued: wait up to 5 s for the SIGCONT
// handler.
static void wait_for_cont(const char *mode) {
    if (!strstr(mode, "_dfl"))
        return;
    for (int i = 0; i < 500 && !cont; i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static int job(char **cmd, int term) {
    // setsid fails for a process-group leader (a test harness may start us as one): the
    // session is then made by a child, whose status becomes ours.
    if (getpgrp() == getpid()) {
        fflush(stdout);
        pid_t leader = fork();
        if (leader < 0) {
            perror("fork");
            return 2;
        }
        if (leader > 0) {
            int status;
            if (waitpid(leader, &status, 0) != leader)
                return 2;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
    }
    int master, slave;
    if (openpty(&master, &slave, NULL, NULL, NULL) != 0) {
        perror("openpty");
        return 2;
    }
    if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) != 0) {
        perror("setsid/TIOCSCTTY");
        return 2;
    }
    struct termios t;
    tcgetattr(slave, &t);
    t.c_lflag |= TOSTOP;
    tcsetattr(slave, TCSANOW, &t);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        dup2(slave, 0);
        close(master);
        close(slave);
        execv(cmd[0], cmd);
        _exit(127);
    }
    setpgid(pid, pid);
    int status;
    for (;;) {
        if (waitpid(pid, &status, WUNTRACED) != pid) {
            perror("waitpid");
            return 2;
        }
        if (WIFSTOPPED(status)) {
            int s = WSTOPSIG(status);
            printf("job: stopped by %s\n", s == SIGTTIN ? "SIGTTIN" : s == SIGTTOU ? "SIGTTOU" : strsignal(s));
            fflush(stdout);
            if (term) {
                kill(-pid, term == 1 ? SIGTERM : SIGKILL);
                kill(-pid, SIGCONT);
                term++;
                continue;
            }
            tcsetpgrp(slave, pid);
            if (write(master, "input\n", 6) != 6)
                perror("write");
            kill(-pid, SIGCONT);
            continue;
        }
        if (term)
            printf("job: status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
        else if (WIFEXITED(status))
            printf("job: exited %d\n", WEXITSTATUS(status));
        else
            printf("job: killed by %d\n", WTERMSIG(status));
        return 0;
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "job") && argc > 2)
        return job(argv + 2, 0);
    if (!strcmp(mode, "job_term") && argc > 2)
        return job(argv + 2, 1);
    setvbuf(stdout, NULL, _IONBF, 0);
    set_handler(SIGCONT, on_cont, SA_RESTART);
    char buf[64] = {0};
    if (!strncmp(mode, "read_", 5)) {
        if (!strcmp(mode, "read_ign"))
            set_handler(SIGTTIN, SIG_IGN, 0);
        else if (!strcmp(mode, "read_handler"))
            set_handler(SIGTTIN, on_ttin, 0);
        ssize_t n = read(0, buf, sizeof buf - 1);
        int e = errno;
        wait_for_cont(mode);
        printf("read=%zd %s%s ttin_handler_ran=%d sigcont_handler_ran=%d\n", n, n < 0 ? strerror(e) : "", n > 0 ? buf : "\n",
               ttin > 0, cont > 0);
    } else if (!strcmp(mode, "setattr_blocked")) {
        sigset_t ttou;
        sigemptyset(&ttou);
        sigaddset(&ttou, SIGTTOU);
        sigprocmask(SIG_BLOCK, &ttou, 0);
        struct termios t;
        tcgetattr(0, &t);
        int r = tcsetattr(0, TCSANOW, &t);
        printf("tcsetattr=%d\n", r);
    } else if (!strncmp(mode, "write_", 6)) {
        if (!strcmp(mode, "write_ign"))
            set_handler(SIGTTOU, SIG_IGN, 0);
        if (!strcmp(mode, "write_blocked")) {
            sigset_t ttou;
            sigemptyset(&ttou);
            sigaddset(&ttou, SIGTTOU);
            sigprocmask(SIG_BLOCK, &ttou, 0);
        }
        int fd = open("/dev/tty", O_WRONLY);
        ssize_t n = write(fd, "out\n", 4);
        wait_for_cont(mode);
        printf("write=%zd sigcont_handler_ran=%d\n", n, cont > 0);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
