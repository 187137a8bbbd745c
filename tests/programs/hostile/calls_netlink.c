// Route netlink as `ip` uses it: a NETLINK_ROUTE socket, its options (NETLINK_EXT_ACK,
// NETLINK_GET_STRICT_CHK set and read back; the old mapped rings refused), and the interface
// list through glibc's getifaddrs (which asks netlink). Compared with the native run.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

static void show(const char *what, int r) {
    printf("%-32s %s\n", what, r < 0 ? strerror(errno) : "0");
}

int main(void) {
    int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    show("netlink socket", s);
    int one = 1, v = 0;
    socklen_t len = sizeof v;
    show("NETLINK_EXT_ACK", setsockopt(s, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one));
    show("NETLINK_GET_STRICT_CHK", setsockopt(s, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof one));
    show("get NETLINK_EXT_ACK", getsockopt(s, SOL_NETLINK, NETLINK_EXT_ACK, &v, &len));
    printf("  value %d, length %u\n", v, len);
    show("NETLINK_NO_ENOBUFS, short", setsockopt(s, SOL_NETLINK, NETLINK_NO_ENOBUFS, &one, 1));
    close(s);
    struct ifaddrs *list;
    show("getifaddrs", getifaddrs(&list));
    for (struct ifaddrs *a = list; a; a = a->ifa_next) {
        char addr[INET6_ADDRSTRLEN] = "-";
        if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)a->ifa_addr)->sin_addr, addr, sizeof addr);
        else if (a->ifa_addr && a->ifa_addr->sa_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr, addr, sizeof addr);
        printf("  %s family %d %s up=%d\n", a->ifa_name, a->ifa_addr ? a->ifa_addr->sa_family : -1, addr,
               (a->ifa_flags & IFF_UP) != 0);
    }
    freeifaddrs(list);
    return 0;
}
