/* netdevice(7)'s interface writes (SIOCSIF*) as LTP's sockioctl01 checks them: EFAULT for an ifreq
 * that cannot be read, EPERM without CAP_NET_ADMIN, ENOTTY on a file. hrt never makes them (they
 * change the host's interfaces; with the capability it answers ENOTTY, a case this program does
 * not ask) and answered ENOTTY for all. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>
static void show(const char *w, int r){ printf("%s: %s\n", w, r==0?"ok":strerror(errno)); }
int main(void){ int s=socket(AF_INET,SOCK_DGRAM,0);
 show("SIOCSIFFLAGS NULL", ioctl(s, SIOCSIFFLAGS, NULL));
 show("SIOCSIFMTU bad pointer", ioctl(s, SIOCSIFMTU, (void*)8));
 struct ifreq r; memset(&r,0,sizeof r); strcpy(r.ifr_name,"lo");
 show("SIOCGIFFLAGS lo", ioctl(s, SIOCGIFFLAGS, &r));
 struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0}; struct __user_cap_data_struct d[2];
 syscall(SYS_capget,&h,d); d[0].effective &= ~(1u<<CAP_NET_ADMIN); syscall(SYS_capset,&h,d);
 show("SIOCSIFFLAGS lo without CAP_NET_ADMIN", ioctl(s, SIOCSIFFLAGS, &r));
 show("SIOCSIFFLAGS NULL without CAP_NET_ADMIN", ioctl(s, SIOCSIFFLAGS, NULL));
 int fd=open("/etc/hostname",0); show("SIOCSIFFLAGS on a file", ioctl(fd, SIOCSIFFLAGS, &r));
 printf("interface writes: done\n"); return 0;}
