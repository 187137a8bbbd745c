// Child processes: system(), popen(), posix_spawn with file actions and attributes, vfork,
// wait4/waitid, kill to a child and to a process group, SIGCHLD, CLOEXEC across exec, exec
// errors. One line per case; the test compares the output and status with a native run.
// Children write to the same stdout: stdout is line-buffered and every child is waited for.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"

extern char **environ;

static void status_line(const char *what, int s) {
    if (WIFEXITED(s))
        printf("%s: exited %d\n", what, WEXITSTATUS(s));
    else if (WIFSIGNALED(s))
        printf("%s: killed by %d\n", what, WTERMSIG(s));
    else
        printf("%s: status %#x\n", what, s);
}

// posix_spawn of argv[0] with `fa` and `attr`; waits; prints the status (or the error).
static void spawn_wait(const char *what, char *const argv[], posix_spawn_file_actions_t *fa,
                       posix_spawnattr_t *attr, char *const envp[]) {
    pid_t pid;
    int r = posix_spawn(&pid, argv[0], fa, attr, argv, envp ? envp : environ);
    if (r != 0) {
        printf("%s: posix_spawn error %d\n", what, r);
        return;
    }
    int s;
    pid_t w = waitpid(pid, &s, 0);
    if (w != pid) {
        report(what, w);
        return;
    }
    status_line(what, s);
}

static volatile sig_atomic_t chld;
static void on_chld(int sig) { (void)sig; chld++; }

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);

    status_line("system exit 3", system("exit 3"));
    status_line("system echo", system("echo hi"));
    status_line("system kill", system("kill -TERM $$"));

    FILE *p = popen("echo hello", "r");
    char buf[128] = {0};
    if (!p || !fgets(buf, sizeof buf, p))
        printf("popen r: failed\n");
    printf("popen r read: %s", buf);
    status_line("pclose r", pclose(p));
    p = popen("cat; exit 4", "w");
    fputs("written to cat\n", p);
    status_line("pclose w", pclose(p));

    char *t[] = {"/bin/true", NULL}, *f[] = {"/bin/false", NULL};
    spawn_wait("spawn true", t, NULL, NULL, NULL);
    spawn_wait("spawn false", f, NULL, NULL, NULL);
    char *killed[] = {"/bin/sh", "-c", "kill -TERM $$", NULL};
    spawn_wait("spawn sh kill TERM", killed, NULL, NULL, NULL);

    // A pipeline: the child's stdout is our pipe (dup2 file action); we read what it wrote.
    int pp[2];
    pipe2(pp, O_CLOEXEC);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pp[1], 1);
    char *echo[] = {"/bin/echo", "through the pipe", NULL};
    pid_t pid;
    int r = posix_spawn(&pid, echo[0], &fa, NULL, echo, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pp[1]);
    memset(buf, 0, sizeof buf);
    ssize_t n = read(pp[0], buf, sizeof buf - 1);
    close(pp[0]);
    int s;
    waitpid(pid, &s, 0);
    printf("pipe child->parent: %d %zd %s", r, n, buf);
    status_line("pipe child", s);

    // The other way: we write into the child's stdin (tr), it writes to our stdout.
    pipe2(pp, O_CLOEXEC);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pp[0], 0);
    char *tr[] = {"/usr/bin/tr", "a-z", "A-Z", NULL};
    r = posix_spawn(&pid, tr[0], &fa, NULL, tr, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pp[0]);
    write(pp[1], "parent to child\n", 16);
    close(pp[1]);
    waitpid(pid, &s, 0);
    status_line("pipe parent->child", s);

    // CLOEXEC descriptors are not inherited; others are.
    int shut = open("/dev/null", O_WRONLY | O_CLOEXEC);
    int kept = open("/dev/null", O_WRONLY);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "exec 2>/dev/null; : >&%d", shut);
    char *c1[] = {"/bin/sh", "-c", cmd, NULL};
    spawn_wait("cloexec fd in child", c1, NULL, NULL, NULL);
    char cmd2[128];
    snprintf(cmd2, sizeof cmd2, "exec 2>/dev/null; : >&%d", kept);
    char *c2[] = {"/bin/sh", "-c", cmd2, NULL};
    spawn_wait("inherited fd in child", c2, NULL, NULL, NULL);
    // A close file action, and dup2 of an fd onto itself clearing CLOEXEC.
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addclose(&fa, kept);
    spawn_wait("closed by file action", c2, &fa, NULL, NULL);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, shut, shut);
    spawn_wait("dup2 onto itself", c1, &fa, NULL, NULL);
    posix_spawn_file_actions_destroy(&fa);
    close(shut);
    close(kept);

    // An environment of its own, and a working directory.
    char *env_cmd[] = {"/bin/sh", "-c", "echo FOO=$FOO; pwd", NULL};
    char *env[] = {"FOO=bar", "PATH=/usr/bin:/bin", NULL};
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addchdir_np(&fa, "/usr");
    spawn_wait("env and chdir", env_cmd, &fa, NULL, env);
    posix_spawn_file_actions_destroy(&fa);

    // After the chdir, paths relative to the new directory: a file action's open and the
    // program itself (the spawn child resolves them from its own directory, not the parent's).
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addchdir_np(&fa, "/bin");
    posix_spawn_file_actions_addopen(&fa, 0, "./sh", O_RDONLY, 0);
    char *rel_cmd[] = {"./sh", "-c", "pwd; head -c 4 | od -An -c", NULL};
    spawn_wait("relative paths after chdir", rel_cmd, &fa, NULL, NULL);
    posix_spawn_file_actions_destroy(&fa);

    // An ignored signal stays ignored in the child; a handled one is default there.
    signal(SIGINT, SIG_IGN);
    char *ign[] = {"/bin/sh", "-c", "kill -INT $$; echo survived SIGINT", NULL};
    spawn_wait("ignored SIGINT", ign, NULL, NULL, NULL);
    signal(SIGINT, SIG_DFL);
    signal(SIGUSR1, on_chld);
    char *usr[] = {"/bin/sh", "-c", "kill -USR1 $$; echo not reached", NULL};
    spawn_wait("handled SIGUSR1", usr, NULL, NULL, NULL);
    signal(SIGUSR1, SIG_DFL);

    // Exec errors come back from posix_spawn.
    char *missing[] = {"/nonexistent/program", NULL};
    spawn_wait("missing program", missing, NULL, NULL, NULL);
    char *notexec[] = {"/etc/passwd", NULL};
    spawn_wait("not executable", notexec, NULL, NULL, NULL);
    char *dir[] = {"/tmp", NULL};
    spawn_wait("a directory", dir, NULL, NULL, NULL);
    char junk[] = "/tmp/hrt-procs-junk-XXXXXX";
    int jfd = mkstemp(junk);
    write(jfd, "\x01\x02\x03junk", 7);
    fchmod(jfd, 0755);
    close(jfd);
    char *bad[] = {junk, NULL};
    spawn_wait("not an executable format", bad, NULL, NULL, NULL);
    unlink(junk);
    char *nope[] = {"hrt-no-such-command", NULL};
    printf("posix_spawnp missing: error %d\n", posix_spawnp(&pid, nope[0], NULL, NULL, nope, environ));
    char *ls_name[] = {"true", NULL};
    r = posix_spawnp(&pid, "true", NULL, NULL, ls_name, environ);
    waitpid(pid, &s, 0);
    printf("posix_spawnp true: %d\n", r);
    status_line("posix_spawnp true", s);

    // vfork: _exit ends only the child; exec in the child.
    pid = vfork();
    if (pid == 0)
        _exit(7);
    waitpid(pid, &s, 0);
    status_line("vfork _exit 7", s);
    pid = vfork();
    if (pid == 0) {
        execl("/bin/echo", "echo", "from vfork exec", (char *)NULL);
        _exit(99);
    }
    waitpid(pid, &s, 0);
    status_line("vfork exec", s);
    pid = vfork();
    if (pid == 0) {
        execl("/nonexistent", "x", (char *)NULL);
        _exit(errno);
    }
    waitpid(pid, &s, 0);
    status_line("vfork exec missing", s);

    // SIGCHLD reaches a handler when a child ends.
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGCHLD);
    sigprocmask(SIG_BLOCK, &block, &old);
    struct sigaction sa = {0};
    sa.sa_handler = on_chld;
    sigaction(SIGCHLD, &sa, NULL);
    chld = 0;
    posix_spawn(&pid, t[0], NULL, NULL, t, environ);
    waitpid(pid, &s, 0);
    while (!chld)
        sigsuspend(&old);
    sigprocmask(SIG_SETMASK, &old, NULL);
    printf("SIGCHLD handler ran: %d\n", chld > 0);
    signal(SIGCHLD, SIG_DFL);

    // WNOHANG before the child ends: it waits for its stdin, which we hold.
    pipe2(pp, O_CLOEXEC);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pp[0], 0);
    char *rd[] = {"/bin/sh", "-c", "read x; exit 5", NULL};
    posix_spawn(&pid, rd[0], &fa, NULL, rd, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(pp[0]);
    report("waitpid WNOHANG while running", waitpid(pid, &s, WNOHANG));
    close(pp[1]);
    report("waitpid after", waitpid(pid, &s, 0) == pid);
    status_line("read child", s);

    // kill to a child, and to a process group it leads.
    char *sl[] = {"/bin/sleep", "100", NULL};
    posix_spawn(&pid, sl[0], NULL, NULL, sl, environ);
    report("kill child", kill(pid, SIGKILL));
    waitpid(pid, &s, 0);
    status_line("killed child", s);
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawn(&pid, sl[0], NULL, &at, sl, environ);
    posix_spawnattr_destroy(&at);
    report("child leads its group", getpgid(pid) == pid);
    report("our group is not its", getpgid(0) != pid);
    report("kill group", kill(-pid, SIGTERM));
    // waitid on it.
    siginfo_t si;
    memset(&si, 0, sizeof si);
    report("waitid", waitid(P_PID, pid, &si, WEXITED));
    printf("waitid: pid ok %d code %d status %d\n", si.si_pid == pid, si.si_code, si.si_status);

    // setsid in the child.
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
    char *sid[] = {"/bin/sh", "-c", "test $(ps -o sid= -p $$) -eq $$ && echo own session", NULL};
    spawn_wait("setsid", sid, NULL, &at, NULL);
    posix_spawnattr_destroy(&at);

    // Identities and errors.
    report("getpgrp is getpgid(0)", getpgrp() == getpgid(0));
    report("getsid", getsid(0) > 0);
    report("wait without children", wait(&s));
    report("waitpid WNOHANG without children", waitpid(-1, &s, WNOHANG));
    return 0;
}
