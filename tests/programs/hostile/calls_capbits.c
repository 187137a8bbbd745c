/* The security bits, the bounding set and the speculation mitigations, read and changed as
 * LTP's prctl02 does: PR_GET_SPECULATION_CTRL answers the host's state (EINVAL with an unused
 * argument set); PR_CAPBSET_DROP drops a capability (PR_CAPBSET_READ then reads 0; EINVAL for
 * an unknown one); without CAP_SETPCAP, PR_SET_SECUREBITS and PR_CAPBSET_DROP fail with EPERM.
 * Under hrt the two changes were "not implemented" (EINVAL) and the speculation query too.
 * Also reboot's and the I/O-flusher flag's refusals (reboot was ENOSYS, the flag EINVAL). */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PR_GET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#define PR_GET_IO_FLUSHER 58
#endif

#ifndef PR_GET_SPECULATION_CTRL
#define PR_GET_SPECULATION_CTRL 52
#endif

static void show(const char *what, int r) {
    printf("%s: %d %s\n", what, r, r < 0 ? (errno == EPERM ? "EPERM" : errno == EINVAL ? "EINVAL" : "other") : "");
}

int main(void) {
    show("securebits", prctl(PR_GET_SECUREBITS, 0, 0, 0, 0));
    show("speculation store bypass", prctl(PR_GET_SPECULATION_CTRL, 0, 0, 0, 0));
    show("speculation indirect branch", prctl(PR_GET_SPECULATION_CTRL, 1, 0, 0, 0));
    show("speculation with arg3", prctl(PR_GET_SPECULATION_CTRL, 0, 1, 0, 0));
    show("speculation with arg4", prctl(PR_GET_SPECULATION_CTRL, 0, 0, 1, 0));
    show("speculation unknown", prctl(PR_GET_SPECULATION_CTRL, 99, 0, 0, 0));
    show("bounding CAP_SYS_BOOT", prctl(PR_CAPBSET_READ, CAP_SYS_BOOT, 0, 0, 0));
    show("drop CAP_SYS_BOOT", prctl(PR_CAPBSET_DROP, CAP_SYS_BOOT, 0, 0, 0));
    show("bounding CAP_SYS_BOOT after", prctl(PR_CAPBSET_READ, CAP_SYS_BOOT, 0, 0, 0));
    show("drop unknown", prctl(PR_CAPBSET_DROP, 999, 0, 0, 0));
    /* reboot with numbers that are not Linux's magic ones (never the real ones: with
     * CAP_SYS_BOOT they would restart the machine): EPERM without the capability, EINVAL with. */
    show("reboot with wrong magic", (int)syscall(SYS_reboot, 1, 2, 0, 0));
    show("set securebits as they are", prctl(PR_SET_SECUREBITS, prctl(PR_GET_SECUREBITS, 0, 0, 0, 0), 0, 0, 0));
    /* Without CAP_SETPCAP (dropped from the effective set): both changes EPERM. */
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) != 0)
        return 1;
    d[0].effective &= ~(1u << CAP_SETPCAP | 1u << CAP_SYS_BOOT | 1u << CAP_SYS_RESOURCE);
    show("capset without CAP_SETPCAP", (int)syscall(SYS_capset, &h, d));
    show("reboot without CAP_SYS_BOOT", (int)syscall(SYS_reboot, 1, 2, 0, 0));
    show("io flusher without CAP_SYS_RESOURCE", prctl(PR_GET_IO_FLUSHER, 0, 0, 0, 0));
    show("set io flusher without CAP_SYS_RESOURCE", prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0));
    show("set securebits", prctl(PR_SET_SECUREBITS, 0, 0, 0, 0));
    show("drop CAP_CHOWN", prctl(PR_CAPBSET_DROP, CAP_CHOWN, 0, 0, 0));
    show("bounding CAP_CHOWN", prctl(PR_CAPBSET_READ, CAP_CHOWN, 0, 0, 0));
    printf("capbits: done\n");
    return 0;
}
