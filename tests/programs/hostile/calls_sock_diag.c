// NETLINK_SOCK_DIAG, through which `ss` lists sockets: the program opens a listening TCP
// socket on a port of its own and finds it among the host's listening sockets (a program's
// sockets are host sockets), with its backlog; the socket was EAFNOSUPPORT under hrt.
#include <arpa/inet.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void) {
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 77) != 0 || getsockname(l, (struct sockaddr *)&a, &alen) != 0)
        return 1;
    int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    printf("netlink sock_diag socket: %s\n", nl >= 0 ? "ok" : "failed");
    if (nl < 0) return 0;
    struct {
        struct nlmsghdr h;
        struct inet_diag_req_v2 r;
    } req = {
        .h = {.nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
        .r = {.sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP, .idiag_states = 1 << 10 /* TCP_LISTEN */},
    };
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(nl, &req, sizeof req, 0, (struct sockaddr *)&kernel, sizeof kernel) != (ssize_t)sizeof req) return 1;
    int found = 0, backlog = -1, done = 0;
    static char buf[1 << 16];
    while (!done) {
        ssize_t n = recv(nl, buf, sizeof buf, 0);
        if (n <= 0) break;
        for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type == NLMSG_DONE || h->nlmsg_type == NLMSG_ERROR) {
                done = 1;
                break;
            }
            struct inet_diag_msg *m = NLMSG_DATA(h);
            if (m->id.idiag_sport == a.sin_port && m->id.idiag_src[0] == htonl(INADDR_LOOPBACK)) {
                found = 1;
                backlog = m->idiag_wqueue;
            }
        }
    }
    printf("our listener found: %d, its backlog: %d\n", found, backlog);
    return 0;
}
