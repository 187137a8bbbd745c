/* Drops capability `cap` from the calling thread's effective set (it stays permitted): what a
 * test of a privileged call's EPERM does in a forked child. Returns capset's result. */
#ifndef DROP_CAP_H
#define DROP_CAP_H
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

static long drop_effective_capability(int cap) {
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    syscall(SYS_capget, &h, d);
    d[cap / 32].effective &= ~(1u << (cap % 32));
    return syscall(SYS_capset, &h, d);
}
#endif
