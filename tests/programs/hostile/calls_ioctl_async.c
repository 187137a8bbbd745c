// Signal-driven I/O and the socket requests of sockios: FIOASYNC on a socket pair and a pipe
// (nginx's master sets it on the pair to each worker, and refused to start them when it was
// ENOTTY), the SIGIO owner through FIOSETOWN/SIOCSPGRP and back through FIOGETOWN/SIOCGPGRP,
// SIGIO arriving when the peer writes, SIOCATMARK on a TCP socket, SIOCGSTAMP before any
// packet (ENOENT), SIOCGIFCONF's length and the loopback interface among its records, and
// the requests on a regular file (ENOTTY). Compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <linux/sockios.h>
#include <unistd.h>

#define SHOW_WIDTH 44
#include "show.h"

static volatile sig_atomic_t sigio;
static void on_sigio(int s) { (void)s; sigio++; }

int main(void) {
    signal(SIGIO, on_sigio);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return 1;
    int on = 1, pid = getpid(), got = 0;
    show("FIOASYNC on a socket pair", ioctl(sv[0], FIOASYNC, &on));
    show("O_ASYNC is set", (fcntl(sv[0], F_GETFL) & O_ASYNC) != 0);
    show("FIOSETOWN to the program", ioctl(sv[0], FIOSETOWN, &pid));
    show("FIOGETOWN", ioctl(sv[0], FIOGETOWN, &got));
    show("FIOGETOWN is the program", got == pid);
    show("SIOCGPGRP", ioctl(sv[0], SIOCGPGRP, &got));
    show("SIOCGPGRP is the program", got == pid);
    show("SIOCSPGRP to the program", ioctl(sv[0], SIOCSPGRP, &pid));
    if (write(sv[1], "x", 1) != 1) return 1;
    for (int i = 0; i < 2000 && !sigio; i++) usleep(5000);
    show("SIGIO after the peer wrote", sigio > 0);
    on = 0;
    show("FIOASYNC off", ioctl(sv[0], FIOASYNC, &on));
    show("O_ASYNC is clear", (fcntl(sv[0], F_GETFL) & O_ASYNC) != 0);
    show("FIOASYNC, bad pointer", ioctl(sv[0], FIOASYNC, (int *)8));

    int p[2];
    if (pipe(p) != 0) return 1;
    on = 1;
    show("FIOASYNC on a pipe", ioctl(p[0], FIOASYNC, &on));
    show("FIOSETOWN on a pipe", ioctl(p[0], FIOSETOWN, &pid));

    int t = socket(AF_INET, SOCK_STREAM, 0);
    show("SIOCATMARK on an unconnected TCP socket", ioctl(t, SIOCATMARK, &got));
    show("SIOCATMARK answer", got);
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    struct timeval tv;
    show("SIOCGSTAMP before any packet", ioctl(u, SIOCGSTAMP, &tv));

    struct ifconf conf = {.ifc_len = 0, .ifc_buf = NULL};
    show("SIOCGIFCONF, no buffer", ioctl(u, SIOCGIFCONF, &conf));
    int needed = conf.ifc_len;
    show("length needed is whole records", needed > 0 && needed % (int)sizeof(struct ifreq) == 0);
    struct ifreq reqs[64];
    conf.ifc_len = sizeof reqs;
    conf.ifc_req = reqs;
    show("SIOCGIFCONF", ioctl(u, SIOCGIFCONF, &conf));
    show("length used is the length needed", conf.ifc_len == needed);
    int lo = 0;
    for (int i = 0; i < conf.ifc_len / (int)sizeof(struct ifreq); i++) lo |= strcmp(reqs[i].ifr_name, "lo") == 0;
    show("loopback listed", lo);
    show("buffer still the program's", conf.ifc_req == reqs);
    conf.ifc_len = sizeof(struct ifreq);
    show("SIOCGIFCONF, room for one", ioctl(u, SIOCGIFCONF, &conf));
    show("one record", conf.ifc_len == (int)sizeof(struct ifreq));
    conf.ifc_len = sizeof reqs;
    conf.ifc_buf = (char *)8;
    show("SIOCGIFCONF, bad buffer", ioctl(u, SIOCGIFCONF, &conf));

    FILE *f = tmpfile();
    show("FIOSETOWN on a file", ioctl(fileno(f), FIOSETOWN, &pid));
    show("SIOCATMARK on a file", ioctl(fileno(f), SIOCATMARK, &got));
    return 0;
}
