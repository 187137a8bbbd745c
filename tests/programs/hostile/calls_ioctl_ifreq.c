// The interface queries of netdevice(7) on an ordinary socket, as MPI transports (UCX's TCP
// layer, which MPICH loads at MPI_Init) and network tools ask them: index, name, flags, MTU,
// hardware address, address and netmask of the loopback interface, a name no interface has
// (ENODEV), a bad pointer (EFAULT), the request on a pipe (ENOTTY). Compared with the native
// run; every value printed is the host's, which the program under hrt shares.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define SHOW_WIDTH 40
#include "show.h"

/// An ifreq naming `name`, every other byte zero.
static struct ifreq named(const char *name) {
    struct ifreq r;
    memset(&r, 0, sizeof r);
    strncpy(r.ifr_name, name, IFNAMSIZ - 1);
    return r;
}

static void show_addr(const char *what, const struct sockaddr *a) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)a;
    char text[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    printf("%-*s family %d %s\n", SHOW_WIDTH, what, in->sin_family, text);
}

int main(void) {
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return 1;
    struct ifreq r = named("lo");
    long rc = ioctl(s, SIOCGIFINDEX, &r);
    show("SIOCGIFINDEX lo", rc);
    int index = r.ifr_ifindex;
    printf("%-*s %d\n", SHOW_WIDTH, "  index", index);

    r = named("");
    r.ifr_ifindex = index;
    show("SIOCGIFNAME of that index", ioctl(s, SIOCGIFNAME, &r));
    printf("%-*s %s\n", SHOW_WIDTH, "  name", r.ifr_name);

    r = named("lo");
    show("SIOCGIFFLAGS lo", ioctl(s, SIOCGIFFLAGS, &r));
    printf("%-*s up %d loopback %d\n", SHOW_WIDTH, "  flags", !!(r.ifr_flags & IFF_UP),
           !!(r.ifr_flags & IFF_LOOPBACK));

    r = named("lo");
    show("SIOCGIFMTU lo", ioctl(s, SIOCGIFMTU, &r));
    printf("%-*s %d\n", SHOW_WIDTH, "  mtu", r.ifr_mtu);

    r = named("lo");
    show("SIOCGIFHWADDR lo", ioctl(s, SIOCGIFHWADDR, &r));
    printf("%-*s family %d bytes %02x%02x%02x%02x%02x%02x\n", SHOW_WIDTH, "  hwaddr",
           r.ifr_hwaddr.sa_family, (unsigned char)r.ifr_hwaddr.sa_data[0],
           (unsigned char)r.ifr_hwaddr.sa_data[1], (unsigned char)r.ifr_hwaddr.sa_data[2],
           (unsigned char)r.ifr_hwaddr.sa_data[3], (unsigned char)r.ifr_hwaddr.sa_data[4],
           (unsigned char)r.ifr_hwaddr.sa_data[5]);

    r = named("lo");
    show("SIOCGIFADDR lo", ioctl(s, SIOCGIFADDR, &r));
    show_addr("  addr", &r.ifr_addr);

    r = named("lo");
    show("SIOCGIFNETMASK lo", ioctl(s, SIOCGIFNETMASK, &r));
    show_addr("  netmask", &r.ifr_netmask);

    r = named("hrt-no-such-if0");
    show("SIOCGIFMTU of no interface", ioctl(s, SIOCGIFMTU, &r));
    show("SIOCGIFINDEX of no interface", ioctl(s, SIOCGIFINDEX, &r));
    show("SIOCGIFMTU at a bad pointer", ioctl(s, SIOCGIFMTU, (void *)16));

    int p[2];
    if (pipe(p) != 0)
        return 1;
    r = named("lo");
    show("SIOCGIFMTU on a pipe", ioctl(p[0], SIOCGIFMTU, &r));
    return 0;
}
