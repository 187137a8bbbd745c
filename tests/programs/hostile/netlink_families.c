/* Netlink families beyond NETLINK_ROUTE: NETLINK_USERSOCK (a message to the socket's own
 * port comes back), NETLINK_KOBJECT_UEVENT (a device-event listener binds to its group, as
 * libudev's monitor does) and NETLINK_GENERIC (the "nlctrl" family's id, which every generic
 * netlink user such as taskstats or ethtool resolves first). Each was EAFNOSUPPORT under hrt. */
#include <errno.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int open_bound(int protocol, unsigned groups, struct sockaddr_nl *bound) {
    int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
    if (s < 0) {
        printf("protocol %d: socket: %s\n", protocol, strerror(errno));
        return -1;
    }
    struct sockaddr_nl a = {.nl_family = AF_NETLINK, .nl_groups = groups};
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0) {
        printf("protocol %d: bind: %s\n", protocol, strerror(errno));
        close(s);
        return -1;
    }
    socklen_t len = sizeof *bound;
    getsockname(s, (struct sockaddr *)bound, &len);
    printf("protocol %d: bound, port is the pid: %s, groups %u\n", protocol,
           bound->nl_pid == (unsigned)getpid() ? "yes" : "no", bound->nl_groups);
    return s;
}

int main(void) {
    struct sockaddr_nl me;
    int u = open_bound(NETLINK_USERSOCK, 0, &me);
    if (u >= 0) {
        struct {
            struct nlmsghdr h;
            char text[16];
        } msg = {{.nlmsg_len = sizeof msg, .nlmsg_type = 0x20, .nlmsg_seq = 7}, "to myself"};
        ssize_t sent = sendto(u, &msg, sizeof msg, 0, (struct sockaddr *)&me, sizeof me);
        char back[64] = {0};
        struct sockaddr_nl from = {0};
        socklen_t flen = sizeof from;
        ssize_t got = recvfrom(u, back, sizeof back, MSG_DONTWAIT, (struct sockaddr *)&from, &flen);
        printf("usersock: sent %zd, got %zd, same bytes: %s, from my port: %s\n", sent, got,
               got == (ssize_t)sizeof msg && memcmp(back, &msg, sizeof msg) == 0 ? "yes" : "no",
               from.nl_pid == me.nl_pid ? "yes" : "no");
        close(u);
    }
    struct sockaddr_nl ev;
    int e = open_bound(NETLINK_KOBJECT_UEVENT, 1, &ev);
    if (e >= 0)
        close(e);
    struct sockaddr_nl gen;
    int g = open_bound(NETLINK_GENERIC, 0, &gen);
    if (g >= 0) {
        struct {
            struct nlmsghdr h;
            struct genlmsghdr g;
            struct nlattr a;
            char name[8];
        } req = {{.nlmsg_len = sizeof req, .nlmsg_type = GENL_ID_CTRL, .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1},
                 {.cmd = CTRL_CMD_GETFAMILY, .version = 1},
                 {.nla_len = NLA_HDRLEN + 7, .nla_type = CTRL_ATTR_FAMILY_NAME},
                 "nlctrl"};
        struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
        sendto(g, &req, sizeof req, 0, (struct sockaddr *)&kernel, sizeof kernel);
        static char answer[8192];
        ssize_t n = recv(g, answer, sizeof answer, 0);
        int id = -1;
        struct nlmsghdr *h = (struct nlmsghdr *)answer;
        if (n > 0 && NLMSG_OK(h, (unsigned)n) && h->nlmsg_type == GENL_ID_CTRL) {
            char *p = (char *)NLMSG_DATA(h) + GENL_HDRLEN;
            char *end = (char *)h + h->nlmsg_len;
            while (p + NLA_HDRLEN <= end) {
                struct nlattr *a = (struct nlattr *)p;
                if (a->nla_len < NLA_HDRLEN)
                    break;
                if (a->nla_type == CTRL_ATTR_FAMILY_ID)
                    id = *(unsigned short *)(p + NLA_HDRLEN);
                p += NLA_ALIGN(a->nla_len);
            }
        }
        printf("generic: nlctrl's family id %d\n", id);
        close(g);
    }
    printf("netlink families: done\n");
    return 0;
}
