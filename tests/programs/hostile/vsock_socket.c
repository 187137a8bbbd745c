/* AF_VSOCK as a program in a virtual machine uses it (Python's test_socket BasicVSOCKTest):
 * the machine's context id from /dev/vsock's ioctl, a stream socket bound to any port and
 * listening, and its name. Where the host has no vsock device every step fails the same way
 * natively and under hrt. hrt refused the family (EAFNOSUPPORT) and the ioctl (ENOTTY). */
#include <errno.h>
#include <fcntl.h>
#include <linux/vm_sockets.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void) {
    int fd = open("/dev/vsock", O_RDONLY);
    unsigned cid = 0;
    int r = fd >= 0 ? ioctl(fd, IOCTL_VM_SOCKETS_GET_LOCAL_CID, &cid) : -1;
    printf("context id: %s\n", r == 0 ? "read" : strerror(errno));
    int s = socket(AF_VSOCK, SOCK_STREAM, 0);
    printf("socket: %s\n", s >= 0 ? "made" : strerror(errno));
    if (s >= 0) {
        struct sockaddr_vm a;
        memset(&a, 0, sizeof a);
        a.svm_family = AF_VSOCK;
        a.svm_cid = VMADDR_CID_ANY;
        a.svm_port = VMADDR_PORT_ANY;
        printf("bind: %s\n", bind(s, (void *)&a, sizeof a) == 0 ? "ok" : strerror(errno));
        printf("listen: %s\n", listen(s, 1) == 0 ? "ok" : strerror(errno));
        struct sockaddr_vm got;
        memset(&got, 0, sizeof got);
        socklen_t len = sizeof got;
        r = getsockname(s, (void *)&got, &len);
        printf("getsockname: %s, family %d, length %u, port chosen %d\n", r == 0 ? "ok" : strerror(errno),
               got.svm_family, len, got.svm_port != VMADDR_PORT_ANY);
    }
    printf("vsock: done\n");
    return 0;
}
