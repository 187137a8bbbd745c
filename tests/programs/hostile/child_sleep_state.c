/* A parent that waits until its forked child shows S (sleeping) in /proc/<pid>/stat or
 * /proc/<pid>/status, then signals it once: the child is in pause() by then, so its handler
 * runs and pause returns (LTP's TST_PROCESS_STATE_WAIT, in msgrcv05, pause01 and many more).
 * The host's view of a forked `hrt` showed S while its VM was being set up: the signal came
 * before the handler and ended the child. Prints how many of the rounds went as on Linux. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_usr1(int sig) { (void)sig; }

/* The state letter of process `pid`, from `stat` or from `status`. */
static char state(pid_t pid, int from_status) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/%s", pid, from_status ? "status" : "stat");
    FILE *f = fopen(path, "r");
    if (!f)
        return '?';
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    if (from_status) {
        char *s = strstr(buf, "State:\t");
        return s ? s[7] : '?';
    }
    char *close = strrchr(buf, ')');
    return close ? close[2] : '?';
}

int main(void) {
    const int rounds = 20;
    int woke = 0;
    for (int r = 0; r < rounds; r++) {
        pid_t c = fork();
        if (c == 0) {
            signal(SIGUSR1, on_usr1);
            pause();
            _exit(7);
        }
        while (state(c, r & 1) != 'S')
            usleep(100);
        kill(c, SIGUSR1);
        int st;
        waitpid(c, &st, 0);
        woke += WIFEXITED(st) && WEXITSTATUS(st) == 7;
    }
    printf("%d of %d children woke from pause by a signal sent once they showed S\n", woke, rounds);
    return 0;
}
