/* Terminal access from a background job (SIGTTIN, SIGTTOU), on a pseudo-terminal.
 *   sig_tty job CMD ARGS... - the job-control harness, a small shell: makes a session with a new
 *       pseudo-terminal as its controlling terminal (TOSTOP set), starts CMD in a process group
 *       of its own, in the background, with the terminal as stdin, and reports how it stops or
 *       ends. A stopped job is brought to the foreground (tcsetpgrp), given a line of input
 *       and continued (SIGCONT), as `fg` does.
 *   sig_tty job_term CMD ARGS... - the same harness, but a stopped job is sent SIGTERM and then
 *       SIGCONT, as bash's `kill %1` does to a stopped job: it must end (reported as a shell's
 *       status, 128 + signal for a killed job); stopped again, it is killed with SIGKILL.
 *   sig_tty fg CMD ARGS... - the same session, CMD in the foreground: a shell that puts its
 *       terminal modes back after a job a signal killed or stopped (as bash), then reports the
 *       job's status and whether the terminal echoes (`foreground_job`).
 *   sig_tty noecho_die SIG - turns the terminal's echo off (a password prompt), then dies of
 *       signal SIG; sig_tty tstp_self - stops itself with SIGTSTP (Ctrl-Z), then says it was
 *       continued. (Under hrt the death is hrt's exit with 128 + SIG and the stop hrt's own:
 *       the harness must still see the echo back on, and SIGTSTP.)
 *   sig_tty MODE - the program: reads from (or writes to) the terminal, then reports on stdout
 *       (a pipe, not the terminal):
 *       read_dfl     - SIGTTIN's default action: stopped until in the foreground, then reads;
 *       read_ign     - SIGTTIN ignored: read fails with EIO at once;
 *       read_blocked - SIGTTIN blocked: read fails with EIO at once (hrt stopped);
 *       read_handler - a SIGTTIN handler (no SA_RESTART): it runs, read fails with EINTR;
 *       read_dfl_eintr - as read_dfl, with a SIGCONT handler without SA_RESTART: continued, the
 *                      read fails with EINTR (hrt's, restarted on the host, read the line);
 *       write_dfl    - write to /dev/tty with TOSTOP: SIGTTOU stops it until in the foreground;
 *       write_ign    - SIGTTOU ignored: the write goes through at once;
 *       write_blocked - SIGTTOU blocked: the write goes through at once;
 *       write_handler - a SIGTTOU handler (no SA_RESTART): it runs, the write fails with EINTR;
 *       setattr_blocked - SIGTTOU blocked: tcsetattr of the terminal succeeds at once (bash's
 *                      jobs block it before they take the terminal; hrt stopped there);
 *       setattr_handler - a SIGTTOU handler: it runs, tcsetattr fails with EINTR (hrt restarted
 *                      the host call for good, at 100 % of a host CPU, and the handler never ran).
 *       (Under hrt the monitor makes the call on the host: it blocks SIGTTOU while it does when
 *       the program's thread blocks it.)
 *       A SIGCONT handler (SA_RESTART but in read_dfl_eintr) reports that it ran: once
 *       continued, the program waits up to 5 s for it (under hrt it comes through the monitor). */
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

/* The harnesses' session: a new pseudo-terminal as the controlling terminal (TOSTOP set), and
 * CMD started in a process group of its own with the terminal as stdin, in the background or
 * (`foreground`) as the terminal's foreground group. Returns CMD's pid, with the terminal's
 * two sides in *master and *slave, or -1. The caller is no process-group leader (`main`). */
static pid_t start_job(char **cmd, int foreground, int *master, int *slave) {
    if (openpty(master, slave, NULL, NULL, NULL) != 0 || setsid() < 0 || ioctl(*slave, TIOCSCTTY, 0) != 0) {
        perror("openpty/setsid/TIOCSCTTY");
        return -1;
    }
    struct termios t;
    tcgetattr(*slave, &t);
    t.c_lflag |= TOSTOP;
    tcsetattr(*slave, TCSANOW, &t);
    // The shell takes the terminal back from a job, from the background of it.
    set_handler(SIGTTOU, SIG_IGN, 0);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        if (foreground)
            tcsetpgrp(*slave, getpid());
        set_handler(SIGTTOU, SIG_DFL, 0);
        dup2(*slave, 0);
        close(*master);
        close(*slave);
        execv(cmd[0], cmd);
        _exit(127);
    }
    setpgid(pid, pid);
    if (foreground)
        tcsetpgrp(*slave, pid);
    return pid;
}

static int job(char **cmd, int term) {
    int master, slave;
    pid_t pid = start_job(cmd, 0, &master, &slave);
    if (pid < 0)
        return 2;
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

/* `fg`: CMD in the foreground. As bash, the harness puts its own terminal modes back after a
 * job a signal killed or stopped, not after one that exited, then reports the job's status as
 * a shell's `$?` and whether the terminal echoes. A stopped job is continued. */
static int foreground_job(char **cmd) {
    int master, slave;
    struct termios shell;
    pid_t pid = start_job(cmd, 1, &master, &slave);
    if (pid < 0)
        return 2;
    tcgetattr(slave, &shell);
    int status;
    for (;;) {
        if (waitpid(pid, &status, WUNTRACED) != pid) {
            perror("waitpid");
            return 2;
        }
        tcsetpgrp(slave, getpgrp());
        if (WIFSIGNALED(status) || WIFSTOPPED(status))
            tcsetattr(slave, TCSADRAIN, &shell);
        if (WIFSTOPPED(status)) {
            int s = WSTOPSIG(status);
            printf("fg: stopped by %s\n", s == SIGTSTP ? "SIGTSTP" : s == SIGSTOP ? "SIGSTOP" : strsignal(s));
            fflush(stdout);
            tcsetpgrp(slave, pid);
            kill(-pid, SIGCONT);
            continue;
        }
        struct termios now;
        tcgetattr(slave, &now);
        printf("fg: status %d, the terminal %s\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
               now.c_lflag & ECHO ? "echoes" : "does not echo");
        return 0;
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int harness = argc > 2 && (!strcmp(mode, "job") || !strcmp(mode, "job_term") || !strcmp(mode, "fg"));
    if (harness && getpgrp() == getpid()) {
        // setsid fails for a process-group leader (a test harness may start us as one): the
        // session is then made by a child, whose status becomes ours.
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
    if (harness && !strcmp(mode, "fg"))
        return foreground_job(argv + 2);
    if (harness)
        return job(argv + 2, !strcmp(mode, "job_term"));
    if (!strcmp(mode, "noecho_die") && argc > 2) {
        struct termios t;
        if (tcgetattr(0, &t) != 0)
            return 3;
        t.c_lflag &= ~(tcflag_t)ECHO;
        if (tcsetattr(0, TCSANOW, &t) != 0)
            return 4;
        raise(atoi(argv[2]));
        return 5;
    }
    if (!strcmp(mode, "tstp_self")) {
        kill(getpid(), SIGTSTP);
        printf("continued\n");
        return 0;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    set_handler(SIGCONT, on_cont, SA_RESTART);
    char buf[64] = {0};
    if (!strncmp(mode, "read_", 5)) {
        if (!strcmp(mode, "read_ign"))
            set_handler(SIGTTIN, SIG_IGN, 0);
        else if (!strcmp(mode, "read_handler"))
            set_handler(SIGTTIN, on_ttin, 0);
        else if (!strcmp(mode, "read_dfl_eintr"))
            set_handler(SIGCONT, on_cont, 0);
        else if (!strcmp(mode, "read_blocked")) {
            sigset_t ttin;
            sigemptyset(&ttin);
            sigaddset(&ttin, SIGTTIN);
            sigprocmask(SIG_BLOCK, &ttin, 0);
        }
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
    } else if (!strcmp(mode, "setattr_handler")) {
        set_handler(SIGTTOU, on_ttin, 0);
        struct termios t;
        tcgetattr(0, &t);
        int r = tcsetattr(0, TCSANOW, &t);
        int e = errno;
        printf("tcsetattr=%d %s ttou_handler_ran=%d\n", r, r < 0 ? strerror(e) : "", ttin > 0);
    } else if (!strncmp(mode, "write_", 6)) {
        if (!strcmp(mode, "write_ign"))
            set_handler(SIGTTOU, SIG_IGN, 0);
        if (!strcmp(mode, "write_handler"))
            set_handler(SIGTTOU, on_ttin, 0);
        if (!strcmp(mode, "write_blocked")) {
            sigset_t ttou;
            sigemptyset(&ttou);
            sigaddset(&ttou, SIGTTOU);
            sigprocmask(SIG_BLOCK, &ttou, 0);
        }
        int fd = open("/dev/tty", O_WRONLY);
        ssize_t n = write(fd, "out\n", 4);
        int e = errno;
        wait_for_cont(mode);
        printf("write=%zd %s sigcont_handler_ran=%d ttou_handler_ran=%d\n", n, n < 0 ? strerror(e) : "", cont > 0, ttin > 0);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
