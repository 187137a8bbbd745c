// Child processes that run a program of their own, for `--children hrt|host`: system(),
// popen(), posix_spawn (argv[0], environment, file actions, working directory), bash with a
// pipeline and a command substitution, fork + exec, exit statuses (a code, SIGTERM, SIGSEGV,
// SIGKILL), an inherited ignored signal, and execve's errors (EACCES, ENOEXEC, ENOENT, a
// script's missing interpreter). Each child that is this program run as `probe` prints one
// line saying who mapped its vDSO: Linux's carries an ELF note (PT_NOTE: "Linux" and the
// kernel's version), HRT's own (kernel/vdso, linked without notes) has none. So a line says
// `vdso=linux` when the child is a host process and `vdso=hrt` when it is an HRT process.
// One line per case; the test compares the output with a native run.
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char self[1024];

static const char *vdso_maker(void) {
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
    if (!eh)
        return "none";
    const Elf64_Phdr *ph = (const Elf64_Phdr *)((const char *)eh + eh->e_phoff);
    for (int i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_NOTE)
            return "linux";
    return "hrt";
}

// `PROG probe TAG [exit N | kill SIG | segv]`: one line, then the asked end.
static int probe(int argc, char **argv) {
    char cwd[4096] = "?";
    if (!getcwd(cwd, sizeof cwd))
        strcpy(cwd, "?");
    const char *base = strrchr(cwd, '/');
    const char *foo = getenv("PROBE_VAR");
    printf("%s: vdso=%s argv0=%s dir=%s var=%s fd3=%s\n", argv[2], vdso_maker(),
           strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0], base ? base + 1 : cwd,
           foo ? foo : "-", fcntl(3, F_GETFD) >= 0 ? "open" : "closed");
    fflush(stdout);
    if (argc > 4 && !strcmp(argv[3], "exit"))
        return atoi(argv[4]);
    if (argc > 4 && !strcmp(argv[3], "kill"))
        kill(getpid(), atoi(argv[4]));
    if (argc > 3 && !strcmp(argv[3], "segv"))
        *(volatile int *)8 = 1;
    return 0;
}

static void status_line(const char *what, int s) {
    if (WIFEXITED(s))
        printf("%s: exited %d\n", what, WEXITSTATUS(s));
    else if (WIFSIGNALED(s))
        printf("%s: killed by %d%s\n", what, WTERMSIG(s), WCOREDUMP(s) ? " (core)" : "");
    else
        printf("%s: status %#x\n", what, s);
}

static void spawn_wait(const char *what, const char *path, char *const argv[], posix_spawn_file_actions_t *fa,
                       char *const envp[]) {
    pid_t pid;
    int r = posix_spawn(&pid, path, fa, NULL, argv, envp ? envp : environ);
    if (r != 0) {
        printf("%s: posix_spawn error %d\n", what, r);
        return;
    }
    int s;
    if (waitpid(pid, &s, 0) != pid) {
        printf("%s: waitpid failed %d\n", what, errno);
        return;
    }
    status_line(what, s);
}

static void write_file(const char *path, const char *text, mode_t mode) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text) || close(fd) != 0) {
        printf("cannot write %s: %d\n", path, errno);
        exit(1);
    }
    chmod(path, mode);
}

int main(int argc, char **argv) {
    if (argc > 2 && !strcmp(argv[1], "probe"))
        return probe(argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || strchr(self, '\''))
        return 1;
    self[n] = 0;
    printf("parent: vdso=%s\n", vdso_maker());
    char cmd[8192];

    // system() and popen(): /bin/sh, then this program.
    snprintf(cmd, sizeof cmd, "'%s' probe system; exit 3", self);
    status_line("system", system(cmd));
    snprintf(cmd, sizeof cmd, "'%s' probe popen | tr a-z A-Z", self);
    FILE *p = popen(cmd, "r");
    char line[512];
    while (p && fgets(line, sizeof line, p))
        printf("popen read: %s", line);
    status_line("pclose", p ? pclose(p) : -1);

    // bash: a pipeline and a command substitution, each running this program.
    snprintf(cmd, sizeof cmd,
             "x=$('%s' probe subst | cut -d' ' -f1-2); echo \"got [$x]\"; "
             "'%s' probe piped | sed 's/^/sed: /'; printf 'a\\nb\\nc\\n' | grep -c .; exit 5",
             self, self);
    char *bash[] = {"bash", "-c", cmd, NULL};
    spawn_wait("bash", "/bin/bash", bash, NULL, NULL);

    // posix_spawn: argv[0] as given, the environment given, descriptors and directory.
    char *named[] = {"custom-name", "probe", "spawn", NULL};
    char *env[] = {"PROBE_VAR=from-envp", NULL};
    spawn_wait("spawn", self, named, NULL, env);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return 1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    posix_spawn_file_actions_adddup2(&fa, fds[1], 3);
    posix_spawn_file_actions_addchdir_np(&fa, "/usr");
    char *redirected[] = {"p", "probe", "redirected", NULL};
    spawn_wait("redirected", self, redirected, &fa, NULL);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    ssize_t got = read(fds[0], line, sizeof line - 1);
    line[got > 0 ? got : 0] = 0;
    printf("pipe read: %s", line);
    close(fds[0]);

    // fork, then exec in the child.
    pid_t pid = fork();
    if (pid == 0) {
        char *forked[] = {"forked", "probe", "forked", NULL};
        execv(self, forked);
        _exit(127);
    }
    int s;
    waitpid(pid, &s, 0);
    status_line("fork+exec", s);

    // How children end: their waiter sees it as on Linux.
    char *code[] = {"p", "probe", "code", "exit", "42", NULL};
    spawn_wait("exit 42", self, code, NULL, NULL);
    char *term[] = {"p", "probe", "term", "kill", "15", NULL};
    spawn_wait("SIGTERM", self, term, NULL, NULL);
    char *segv[] = {"p", "probe", "segv", "segv", NULL};
    spawn_wait("SIGSEGV", self, segv, NULL, NULL);
    status_line("system kill -9", system("kill -9 $$"));

    // An ignored signal stays ignored in the program the child runs.
    signal(SIGINT, SIG_IGN);
    char *ign[] = {"/bin/sh", "-c", "kill -INT $$; echo survived SIGINT", NULL};
    spawn_wait("ignored SIGINT", "/bin/sh", ign, NULL, NULL);
    signal(SIGINT, SIG_DFL);

    // What execve refuses.
    char dir[] = "/tmp/hrt-children-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/noexec", dir);
    write_file(path, "#!/bin/sh\necho no\n", 0644);
    char *a1[] = {path, NULL};
    spawn_wait("no execute permission", path, a1, NULL, NULL);
    snprintf(path, sizeof path, "%s/text", dir);
    write_file(path, "echo plain text\n", 0755);
    spawn_wait("plain text file", path, a1, NULL, NULL);
    status_line("plain text file from sh", system(path));
    snprintf(path, sizeof path, "%s/badinterp", dir);
    write_file(path, "#!/nonexistent/interpreter\n", 0755);
    spawn_wait("missing interpreter", path, a1, NULL, NULL);
    snprintf(path, sizeof path, "%s/script", dir);
    write_file(path, "#!/bin/sh -e\necho \"script: ${0##*/} $1\"\nexit 4\n", 0755);
    char *sa[] = {"ignored-argv0", "arg1", NULL};
    spawn_wait("script", path, sa, NULL, NULL);
    char *missing[] = {"/nonexistent/program", NULL};
    spawn_wait("missing program", missing[0], missing, NULL, NULL);
    // The ELF magic and nothing of an ELF header after it: ENOEXEC (under `--children hrt`
    // the child `hrt` started and exited 126).
    snprintf(path, sizeof path, "%s/badelf", dir);
    write_file(path, "\177ELF-not-an-executable-at-all\n", 0755);
    spawn_wait("ELF magic only", path, a1, NULL, NULL);
    const char *made[] = {"noexec", "text", "badinterp", "script", "badelf"};
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, made[i]);
        unlink(path);
    }
    rmdir(dir);
    return 0;
}
