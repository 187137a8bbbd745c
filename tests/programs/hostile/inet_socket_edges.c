/* TCP and socket requests hrt answered differently: recv(fd, NULL, n, MSG_TRUNC) on TCP
 * discards n bytes without touching the buffer (hrt: EFAULT, data kept); SIOCOUTQNSD, and
 * SIOCGIFMETRIC and SIOCGIFMAP of `lo`, answer (hrt: ENOTTY); SIOCGSKNS gives the socket's
 * network namespace as a new descriptor (hrt: ENOTTY). Loopback only. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define SIOCOUTQNSD 0x894b
#define SIOCGSKNS 0x894c

int main(void) {
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int s = socket(AF_INET, SOCK_STREAM, 0);
    socklen_t l = sizeof a;
    if (bind(s, (void *)&a, sizeof a) || getsockname(s, (void *)&a, &l) || listen(s, 1))
        return 1;
    int c = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(c, (void *)&a, sizeof a))
        return 1;
    int d = accept(s, 0, 0);
    if (write(c, "abcdef", 6) != 6)
        return 1;
    char b[16] = {0};
    if (recv(d, b, 1, MSG_PEEK) != 1) /* the bytes are there */
        return 1;
    errno = 0;
    ssize_t r = recv(d, NULL, 3, MSG_TRUNC);
    printf("TCP recv(NULL, 3, MSG_TRUNC): %zd (%s)", r, r < 0 ? strerror(errno) : "discarded");
    r = recv(d, b, sizeof b, 0);
    printf(", then recv: %.*s\n", (int)(r > 0 ? r : 0), b);
    int unsent = -1;
    errno = 0;
    int q = ioctl(c, SIOCOUTQNSD, &unsent);
    printf("SIOCOUTQNSD: %d (%s), %d unsent\n", q, strerror(errno), unsent);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    errno = 0;
    q = ioctl(c, SIOCGIFMETRIC, &ifr);
    printf("SIOCGIFMETRIC of lo: %d (%s), metric %d\n", q, strerror(errno), ifr.ifr_metric);
    errno = 0;
    q = ioctl(c, SIOCGIFMAP, &ifr);
    printf("SIOCGIFMAP of lo: %d (%s)\n", q, strerror(errno));
    errno = 0;
    int ns = ioctl(c, SIOCGSKNS);
    printf("SIOCGSKNS: a descriptor %d (%s), close-on-exec %d\n", ns >= 0, strerror(errno),
           ns >= 0 && (fcntl(ns, F_GETFD) & FD_CLOEXEC) != 0);
    return 0;
}
