/* prctl options that are properties of the host process: PR_SET_PDEATHSIG (a grandchild is
 * signalled when its parent ends), PR_SET_CHILD_SUBREAPER (the orphaned grandchild becomes
 * the caller's child) and PR_SET_NO_NEW_PRIVS (a spawned program has it), each with its GET. */
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;
static volatile sig_atomic_t got;
static void on(int s) { got = s; }

int main(void) {
    setvbuf(stdout, 0, _IONBF, 0);
    int v = -1;
    prctl(PR_GET_PDEATHSIG, &v);
    printf("pdeathsig at start: %d\n", v);
    printf("bad signal: %d\n", prctl(PR_SET_PDEATHSIG, 65));

    /* Subreaper: an orphaned grandchild is ours to wait for. */
    printf("set subreaper: %d\n", prctl(PR_SET_CHILD_SUBREAPER, 1));
    prctl(PR_GET_CHILD_SUBREAPER, &v);
    printf("subreaper: %d\n", v);

    /* A (child) forks B (grandchild); B sets a parent-death signal and says so; A ends; B gets
     * SIGUSR1, says so, and exits 5; we wait for A, then for B (reparented to us). */
    int ready[2], report[2];
    pipe(ready);
    pipe(report);
    pid_t a = fork();
    if (a == 0) {
        pid_t b = fork();
        if (b == 0) {
            signal(SIGUSR1, on);
            prctl(PR_SET_PDEATHSIG, SIGUSR1);
            int mine = 0;
            prctl(PR_GET_PDEATHSIG, &mine);
            pid_t c = fork();
            if (c == 0) {
                int inherited = -1;
                prctl(PR_GET_PDEATHSIG, &inherited);
                _exit(inherited);
            }
            int st;
            waitpid(c, &st, 0);
            char line[80];
            int n = snprintf(line, sizeof line, "B: pdeathsig %d, its child's %d\n", mine, WEXITSTATUS(st));
            write(report[1], line, n);
            write(ready[1], "r", 1);
            sigset_t none;
            sigemptyset(&none);
            while (!got)
                sigsuspend(&none);
            n = snprintf(line, sizeof line, "B: parent ended, got signal %d\n", (int)got);
            write(report[1], line, n);
            _exit(5);
        }
        char c;
        read(ready[0], &c, 1);
        _exit(0);
    }
    close(ready[1]);
    close(report[1]);
    int st;
    waitpid(a, &st, 0);
    printf("A ended: %d\n", WEXITSTATUS(st));
    pid_t who = wait(&st);
    printf("then a grandchild reaped: %d, status %d\n", who > 0 && who != a, WEXITSTATUS(st));
    printf("no more children: %d\n", wait(&st) == -1);
    char buf[256];
    int n, len = 0;
    while ((n = read(report[0], buf + len, sizeof buf - 1 - len)) > 0)
        len += n;
    buf[len] = 0;
    fputs(buf, stdout);

    /* No new privileges: reported, refused to clear, and a spawned program has it. */
    printf("get before: %d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
    printf("set 2: %d\n", prctl(PR_SET_NO_NEW_PRIVS, 2, 0, 0, 0));
    printf("set: %d\n", prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
    printf("get after: %d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
    /* The program's own status says so too. */
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    while (status && fgets(line, sizeof line, status))
        if (!strncmp(line, "NoNewPrivs:", 11))
            printf("own status %s", line);
    if (status)
        fclose(status);
    fflush(stdout);
    char *argv[] = {"grep", "NoNewPrivs", "/proc/self/status", 0};
    pid_t g;
    if (posix_spawnp(&g, "grep", 0, 0, argv, environ) == 0)
        waitpid(g, &st, 0);
    return 0;
}
