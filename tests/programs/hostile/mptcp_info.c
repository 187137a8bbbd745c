/* Multipath TCP as Go's net TestMultiPathTCP uses it: a listening and a connecting MPTCP
 * socket on the loopback, and MPTCP_INFO asked of each side (Go reads its error as "fell back
 * to TCP": under hrt the option's level was not forwarded). Where the host has no MPTCP, the
 * socket calls fail the same way natively and under hrt. */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif
#define SOL_MPTCP 284
#define MPTCP_INFO 1

static const char *err(int r) { return r >= 0 ? "ok" : strerror(errno); }

int main(void) {
    int l = socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP);
    printf("listening socket: %s\n", err(l));
    if (l >= 0) {
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof a;
        int r = bind(l, (void *)&a, sizeof a);
        r = r == 0 ? listen(l, 1) : r;
        r = r == 0 ? getsockname(l, (void *)&a, &len) : r;
        printf("bind, listen: %s\n", err(r));
        int c = socket(AF_INET, SOCK_STREAM, IPPROTO_MPTCP);
        printf("connect: %s\n", err(connect(c, (void *)&a, sizeof a)));
        int s = accept(l, NULL, NULL);
        char info[256];
        socklen_t n = sizeof info;
        printf("MPTCP_INFO of the connecting side: %s\n", err(getsockopt(c, SOL_MPTCP, MPTCP_INFO, info, &n)));
        n = sizeof info;
        printf("MPTCP_INFO of the accepted side: %s\n", err(getsockopt(s, SOL_MPTCP, MPTCP_INFO, info, &n)));
    }
    printf("mptcp: done\n");
    return 0;
}
