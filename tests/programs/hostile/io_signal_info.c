/* What an I/O signal's siginfo says, as on Linux: a plain SIGIO (O_ASYNC, no F_SETSIG) comes
 * with SI_KERNEL; one chosen with F_SETSIG (a real-time signal, or SIGIO itself) with the
 * POLL_* reason, si_band (the poll bits) and si_fd, the descriptor's number in this program
 * (several descriptors, set up with fcntl O_ASYNC and with ioctl FIOASYNC, on a pipe and a
 * socket pair). Signals are waited for (up to 10 s each), so the order of events, not their
 * timing, is what is compared. One line per case. Usage: io_signal_info */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "handler.h"

static volatile sig_atomic_t got, code, fd;
static volatile long band;

static void on_signal(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    got = sig;
    code = si->si_code;
    fd = si->si_fd;
    band = si->si_band;
}

/* Waits for a signal (10 s at most) and prints what came. */
static void report(const char *what, int sig_wanted) {
    for (int i = 0; i < 1000 && !got; i++)
        usleep(10000);
    if (!got) {
        printf("%-32s no signal\n", what);
        return;
    }
    if (code > 0 && code < 0x80)
        printf("%-32s signal %s code %d fd %d band %#lx\n", what, got == sig_wanted ? "as set" : "other",
               (int)code, (int)fd, band);
    else
        printf("%-32s signal %s code %d\n", what, got == sig_wanted ? "as set" : "other", (int)code);
    got = 0;
}

/* Makes `rd` signal-driven, to this process, with signal `sig` (0: plain SIGIO), set up with
 * fcntl (or with ioctl FIOASYNC when `by_ioctl`). */
static void make_async(int rd, int sig, int by_ioctl) {
    fcntl(rd, F_SETOWN, getpid());
    if (sig)
        fcntl(rd, F_SETSIG, sig);
    if (by_ioctl) {
        int on = 1;
        ioctl(rd, FIOASYNC, &on);
        fcntl(rd, F_SETFL, fcntl(rd, F_GETFL) | O_NONBLOCK);
    } else {
        fcntl(rd, F_SETFL, fcntl(rd, F_GETFL) | O_ASYNC | O_NONBLOCK);
    }
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    set_info_handler(SIGIO, on_signal, SA_RESTART);
    set_info_handler(SIGRTMIN + 4, on_signal, SA_RESTART);
    char buf[64];

    int a[2], b[2], s[2];
    if (pipe(a) || pipe(b) || socketpair(AF_UNIX, SOCK_STREAM, 0, s))
        return 1;
    /* Move the pipes' read ends to numbers of their own, far from the host's. */
    int ra = dup2(a[0], 40), rb = dup2(b[0], 41);
    close(a[0]);
    close(b[0]);

    make_async(ra, 0, 0);
    write(a[1], "x", 1);
    report("plain SIGIO, pipe", SIGIO);
    read(ra, buf, sizeof buf);

    make_async(rb, SIGRTMIN + 4, 0);
    write(b[1], "y", 1);
    report("F_SETSIG rt, pipe", SIGRTMIN + 4);
    printf("fd is the read end: %d\n", fd == rb);
    read(rb, buf, sizeof buf);

    make_async(s[0], SIGIO, 1);
    write(s[1], "z", 1);
    report("F_SETSIG SIGIO, socket, ioctl", SIGIO);
    printf("fd is the socket: %d\n", fd == s[0]);
    read(s[0], buf, sizeof buf);

    /* The peer goes: the socket reports the hang-up (POLL_IN or POLL_HUP, as Linux picks). */
    close(s[1]);
    report("peer closed, socket", SIGIO);
    printf("done\n");
    return 0;
}
