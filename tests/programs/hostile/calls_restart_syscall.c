// restart_syscall made by the program itself, with no interrupted call to resume: EINTR, as
// Linux answers (it was ENOSYS); then a sleep a stop interrupts still ends.
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(void) {
    errno = 0;
    long r = syscall(SYS_restart_syscall);
    printf("restart_syscall %ld errno %d\n", r, errno);
    r = syscall(SYS_restart_syscall);
    printf("again %ld errno %d\n", r, errno);
    struct timespec t = {0, 1000000};
    printf("nanosleep %d\n", nanosleep(&t, 0));
    printf("restart syscall: done\n");
    return 0;
}
