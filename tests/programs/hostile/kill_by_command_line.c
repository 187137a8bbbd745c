/* A process found by its command line, as `pidof -s NAME` and `pgrep -f` find one, stops when
 * sent SIGTERM. Under hrt the VM's teardown holder shares hrt's memory and so shows the same
 * command line; with signals blocked it ignored the kill that a service script's
 * `kill $(pidof -s server)` sent it, and the server ran on. It now passes them to hrt. Here the
 * program starts itself again as "waiter" and sends SIGTERM to the newest process whose
 * command line is the waiter's (natively the waiter; under hrt --children hrt usually the
 * holder, made after the waiter's hrt). Then it starts a "counter" and sends SIGTERM to every
 * process with its command line (`kill $(pidof prog)`): the counter gets one, as natively,
 * not a second one passed on by the holder (a second SIGTERM is "stop now" to many servers). */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void on_term(int sig) {
    (void)sig;
    static const char msg[] = "waiter: SIGTERM\n";
    write(1, msg, sizeof msg - 1);
    _exit(0);
}

static volatile sig_atomic_t terms;

static void count_term(int sig) {
    (void)sig;
    terms++;
}

static void report_terms(int sig) {
    (void)sig;
    char msg[] = "counter: N SIGTERM\n";
    msg[9] = (char)('0' + (terms > 9 ? 9 : terms));
    write(1, msg, sizeof msg - 1);
    _exit(0);
}

static int counter(void) {
    signal(SIGTERM, count_term);
    signal(SIGUSR1, report_terms);
    write(3, "r", 1);
    close(3);
    for (int i = 0; i < 100; i++)
        sleep(1);
    return 1;
}

static int waiter(void) {
    signal(SIGTERM, on_term);
    write(3, "r", 1); /* ready */
    close(3);
    for (int i = 0; i < 100; i++)
        sleep(1);
    printf("waiter: never signalled\n");
    return 1;
}

/* The newest (highest) pid whose command line is exactly `want` (`len` bytes with NULs); with
 * `sig`, sends it to every such process instead. */
static pid_t newest_with(const char *want, size_t len, int sig) {
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t best = -1;
    while (d && (e = readdir(d))) {
        pid_t p = atoi(e->d_name);
        if (p <= 0 || p == getpid())
            continue;
        char path[64], line[256];
        snprintf(path, sizeof path, "/proc/%d/cmdline", p);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(line, 1, sizeof line, f);
        fclose(f);
        /* hrt pads a forked child's command line with NULs: only the first `len` bytes count. */
        int pad = 1;
        for (size_t i = len; i < n; i++)
            pad &= line[i] == 0;
        if (n >= len && pad && !memcmp(line, want, len)) {
            if (sig)
                kill(p, sig);
            if (p > best)
                best = p;
        }
    }
    if (d)
        closedir(d);
    return best;
}

/* Starts this program again as `argv0 mode` and waits until it is ready; its command line
 * (NULs included) goes to `want` (256 bytes), its length to `len`. */
static pid_t start_copy(const char *argv0, const char *mode, char *want, int *len) {
    int ready[2];
    if (pipe(ready))
        return -1;
    pid_t c = fork();
    if (c == 0) {
        dup2(ready[1], 3);
        execl("/proc/self/exe", argv0, mode, (char *)NULL);
        _exit(127);
    }
    close(ready[1]);
    char b;
    read(ready[0], &b, 1);
    close(ready[0]);
    *len = snprintf(want, 256, "%s%c%s%c", argv0, 0, mode, 0);
    return c;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "waiter"))
        return waiter();
    if (argc > 1 && !strcmp(argv[1], "counter"))
        return counter();
    setvbuf(stdout, NULL, _IONBF, 0);
    char want[256];
    int len;
    pid_t c = start_copy(argv[0], "waiter", want, &len);
    pid_t target = newest_with(want, (size_t)len, 0);
    printf("found a process with the waiter's command line: %s\n", target > 0 ? "yes" : "no");
    if (target > 0)
        kill(target, SIGTERM);
    int st = 0;
    for (int i = 0; i < 100 && waitpid(c, &st, WNOHANG) == 0; i++) {
        struct timespec t = {0, 50 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    if (waitpid(c, &st, WNOHANG) == 0) {
        printf("the waiter runs on after 5 s\n");
        kill(c, SIGKILL);
        waitpid(c, &st, 0);
        return 1;
    }
    printf("waiter ended: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);

    /* Every process with the counter's command line gets SIGTERM, then the counter says how
     * many it got. */
    pid_t k = start_copy(argv[0], "counter", want, &len);
    newest_with(want, (size_t)len, SIGTERM);
    struct timespec settle = {0, 300 * 1000 * 1000};
    nanosleep(&settle, NULL);
    kill(k, SIGUSR1);
    waitpid(k, &st, 0);
    printf("counter ended: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}
