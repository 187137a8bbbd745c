/* Calls system-call numbers that no x86-64 Linux implements (400 lies in the gap between rseq,
 * 334, and pidfd_send_signal, 424; 1000 and 100000 lie beyond the table; -1 is the "no system
 * call" number) and checks that each fails with ENOSYS; then carries on with ordinary work.
 * Exit status 0 when every call gave ENOSYS, 1 otherwise. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void) {
    static const long numbers[] = {400, 1000, 100000, -1};
    int failures = 0;
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        errno = 0;
        long r = syscall(numbers[i], 1L, 2L, 3L, 4L, 5L, 6L);
        int e = errno;
        int ok = r == -1 && e == ENOSYS;
        if (e == ENOSYS)
            printf("syscall(%ld) = %ld, errno ENOSYS: ok\n", numbers[i], r);
        else
            printf("syscall(%ld) = %ld, errno %d: WRONG\n", numbers[i], r, e);
        failures += !ok;
    }
    /* Carry on: ordinary system calls still work. */
    pid_t pid = getpid();
    long tid = syscall(SYS_gettid);
    printf("getpid equals gettid in the main thread: %s\n", pid == tid ? "yes" : "no");
    if (write(1, "", 0) != 0)
        failures++;
    printf("carried on after ENOSYS\n");
    return failures ? 1 : 0;
}
