/* A terminal's modes after a foreground job dies of a signal or stops, on a pseudo-terminal.
 *   tty_modes job CMD ARGS... - a small job-control shell: makes a session with a new
 *       pseudo-terminal as its controlling terminal, runs CMD in the foreground in a process
 *       group of its own with the terminal as stdin, and reports how it stops or ends: a shell's
 *       status (128 + signal for a killed job) and the stop signal's name. As bash, it puts its
 *       own terminal modes back after a job a signal killed or stopped, but not after one that
 *       exited; then it reports whether the terminal echoes. A stopped job is continued.
 *   tty_modes noecho_die SIG - the program: turns the terminal's echo off (a password prompt),
 *       then dies of signal SIG without turning it back on.
 *   tty_modes tstp_self - the program: stops itself with SIGTSTP (as Ctrl-Z does), then says
 *       it was continued.
 * Under hrt the program's death is hrt's exit with 128 + SIG (a shell restores nothing then),
 * and hrt's stop its own: the harness must see the echo back on and SIGTSTP, as natively. */
#define _GNU_SOURCE
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static int job(char **cmd) {
    // setsid fails for a process-group leader: the session is then made by a child.
    if (getpgrp() == getpid()) {
        fflush(stdout);
        pid_t leader = fork();
        if (leader < 0)
            return 2;
        if (leader > 0) {
            int status;
            if (waitpid(leader, &status, 0) != leader)
                return 2;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
    }
    int master, slave;
    if (openpty(&master, &slave, NULL, NULL, NULL) != 0 || setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) != 0) {
        perror("openpty/setsid/TIOCSCTTY");
        return 2;
    }
    struct termios shell;
    tcgetattr(slave, &shell);
    signal(SIGTTOU, SIG_IGN); // the shell takes the terminal back from a stopped job
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        tcsetpgrp(slave, getpid());
        signal(SIGTTOU, SIG_DFL);
        dup2(slave, 0);
        close(master);
        close(slave);
        execv(cmd[0], cmd);
        _exit(127);
    }
    setpgid(pid, pid);
    tcsetpgrp(slave, pid);
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
            printf("job: stopped by %s\n", s == SIGTSTP ? "SIGTSTP" : s == SIGSTOP ? "SIGSTOP" : strsignal(s));
            fflush(stdout);
            tcsetpgrp(slave, pid);
            kill(-pid, SIGCONT);
            continue;
        }
        struct termios now;
        tcgetattr(slave, &now);
        printf("job: status %d, the terminal %s\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
               now.c_lflag & ECHO ? "echoes" : "does not echo");
        return 0;
    }
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "job") && argc > 2)
        return job(argv + 2);
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
    fprintf(stderr, "usage: tty_modes job CMD... | noecho_die SIG | tstp_self\n");
    return 2;
}
