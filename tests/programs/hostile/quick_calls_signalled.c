// Calls that never wait (lseek, fstat, a read of /dev/zero, getppid through the host) while
// another process sends the caller signals with a handler (no SA_RESTART): Linux finishes such
// a call and runs the handler after it, never failing it with EINTR. Under hrt the signal
// reaches the program through the host while the call is forwarded; it failed such calls with
// EINTR (stress-ng's sweep). The child counts failures; compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t hits, stop;

static void on_signal(int sig) {
    if (sig == SIGUSR1)
        hits++;
    else
        stop = 1;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGUSR1, &sa, NULL);
    sigaction(SIGUSR2, &sa, NULL);
    int ready[2];
    if (pipe(ready) != 0)
        return 1;
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        int full = open("/dev/full", O_RDWR), zero = open("/dev/zero", O_RDONLY);
        long calls = 0, failed[4] = {0};
        char buf[64];
        struct stat st;
        if (write(ready[1], "r", 1) != 1)
            _exit(1);
        while (!stop) {
            calls++;
            failed[0] += lseek(full, calls * 4096, SEEK_SET) < 0;
            failed[1] += fstat(full, &st) < 0;
            failed[2] += read(zero, buf, sizeof buf) < 0;
            failed[3] += getppid() < 0;
        }
        printf("child: lseek failed %ld, fstat %ld, read %ld, getppid %ld; handled signals: %s\n", failed[0],
               failed[1], failed[2], failed[3], hits > 0 ? "yes" : "no");
        fflush(stdout);
        _exit(0);
    }
    char c;
    if (read(ready[0], &c, 1) != 1)
        return 1;
    for (int i = 0; i < 1500; i++) {
        kill(child, SIGUSR1);
        usleep(200);
    }
    kill(child, SIGUSR2);
    int status;
    waitpid(child, &status, 0);
    printf("quick calls under signals: child exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return 0;
}
