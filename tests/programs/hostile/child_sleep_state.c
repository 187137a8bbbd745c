/* A parent that waits until its forked child shows S (sleeping) in /proc/<pid>/stat or
 * /proc/<pid>/status, then signals it once: the child is in pause() by then, so its handler
 * runs and pause returns (LTP's TST_PROCESS_STATE_WAIT, in msgrcv05, pause01 and many more).
 * The host's view of a forked `hrt` showed S while its VM was being set up: the signal came
 * before the handler and ended the child. Then a child whose vmsplice waits for room in a
 * full pipe shows S, and its call goes through once the parent reads; and a child in a semop
 * that waits shows S only once the host's semop waits (removing the set then gives it EIDRM,
 * not EINVAL). Prints how many of the rounds went as on Linux. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sem.h>
#include <sys/uio.h>
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

    /* A child whose vmsplice waits for room in a full pipe sleeps too (LTP vmsplice04; the
     * call waited on the monitor's polling thread, and the child showed R). */
    int fds[2];
    if (pipe(fds) != 0)
        return 1;
    fcntl(fds[1], F_SETFL, O_NONBLOCK);
    static char page[4096];
    while (write(fds[1], page, sizeof page) > 0)
        ;
    fcntl(fds[1], F_SETFL, 0);
    pid_t c = fork();
    if (c == 0) {
        struct iovec v = {page, sizeof page};
        ssize_t n = vmsplice(fds[1], &v, 1, 0);
        _exit(n > 0 ? 0 : 1);
    }
    int tries = 0;
    while (state(c, 0) != 'S' && tries++ < 5000)
        usleep(1000);
    printf("a child in a vmsplice that waits shows S: %s\n", tries <= 5000 ? "yes" : "no");
    /* One page read makes room for the child's page. */
    if (read(fds[0], page, sizeof page) != sizeof page)
        return 1;
    int st;
    waitpid(c, &st, 0);
    printf("its vmsplice went through once there was room: %s\n", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "yes" : "no");

    /* A child in a semop that waits shows S only once the call waits (LTP semop03): the set
     * removed then, its semop fails with EIDRM, not EINVAL (no such set). */
    int eidrm = 0;
    for (int r = 0; r < 10; r++) {
        int set = semget(IPC_PRIVATE, 1, 0600);
        pid_t w = fork();
        if (w == 0) {
            struct sembuf down = {0, -1, 0};
            _exit(semop(set, &down, 1) == -1 && errno == EIDRM ? 0 : 1);
        }
        while (state(w, r & 1) != 'S')
            usleep(100);
        semctl(set, 0, IPC_RMID);
        waitpid(w, &st, 0);
        eidrm += WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    printf("%d of 10 children in semop saw their set removed (EIDRM)\n", eidrm);
    return 0;
}
