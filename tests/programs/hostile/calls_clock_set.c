/* Setting the realtime clock, as Python's test_time does: clock_settime(CLOCK_REALTIME) and
 * settimeofday to the time just read (a step back of microseconds) succeed with CAP_SYS_TIME
 * (EPERM without, once the program dropped it), and the program's clocks (the vDSO's
 * clock_gettime, gettimeofday, time, the system call) still agree with the host's, whose
 * time a new file's modification time shows. Other clocks cannot be set (EINVAL). hrt
 * answered ENOSYS for every setting. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char *err(int r) {
    return r == 0 ? "ok" : errno == EPERM ? "EPERM" : errno == EINVAL ? "EINVAL" : errno == ENOSYS ? "ENOSYS" : "other";
}

/* Whether the program's realtime clock (read four ways) is within a second of the host's,
 * which a new file's mtime shows. */
static int agrees_with_host(void) {
    char path[] = "/tmp/hrt-clock-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    struct stat st;
    fstat(fd, &st);
    close(fd);
    unlink(path);
    struct timespec v, k;
    clock_gettime(CLOCK_REALTIME, &v);
    syscall(SYS_clock_gettime, CLOCK_REALTIME, &k);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    time_t t = time(NULL);
    long long host = st.st_mtim.tv_sec;
    return llabs(v.tv_sec - host) <= 1 && llabs(k.tv_sec - host) <= 1 && llabs(tv.tv_sec - host) <= 1 && llabs(t - host) <= 1;
}

int main(void) {
    printf("agrees at start: %d\n", agrees_with_host());
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    printf("clock_settime realtime: %s\n", err(clock_settime(CLOCK_REALTIME, &now)));
    printf("agrees after: %d\n", agrees_with_host());
    printf("clock_settime monotonic: %s\n", err(clock_settime(CLOCK_MONOTONIC, &now)));
    struct timeval tv;
    gettimeofday(&tv, NULL);
    printf("settimeofday: %s\n", err(settimeofday(&tv, NULL)));
    printf("agrees after: %d\n", agrees_with_host());
    struct timespec bad = {now.tv_sec, 1000000000};
    printf("clock_settime bad nanoseconds: %s\n", err(clock_settime(CLOCK_REALTIME, &bad)));
    /* Without CAP_SYS_TIME. */
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    if (syscall(SYS_capget, &h, d) != 0)
        return 1;
    d[0].effective &= ~(1u << CAP_SYS_TIME);
    syscall(SYS_capset, &h, d);
    clock_gettime(CLOCK_REALTIME, &now);
    printf("clock_settime without CAP_SYS_TIME: %s\n", err(clock_settime(CLOCK_REALTIME, &now)));
    printf("clock_set: done\n");
    return 0;
}
