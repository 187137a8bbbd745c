// getpriority and setpriority, ioprio_get and ioprio_set, on the program itself (0, its pid, a thread created after the
// change), on nobody, with a bad `which`, and the niceness a child started with system()
// inherits (`nice` prints it). Compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static void show(const char *what, int r) {
    if (r == -1 && errno != 0)
        printf("%-32s -1 %s\n", what, strerror(errno));
    else
        printf("%-32s %d\n", what, r);
    fflush(stdout);
}

static void *later(void *arg) {
    (void)arg;
    errno = 0;
    show("new thread, by its tid", getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid)));
    errno = 0;
    show("new thread, self", getpriority(PRIO_PROCESS, 0));
    return NULL;
}

int main(void) {
    errno = 0;
    show("self", getpriority(PRIO_PROCESS, 0));
    errno = 0;
    show("by pid", getpriority(PRIO_PROCESS, getpid()));
    show("set 3", setpriority(PRIO_PROCESS, 0, 3));
    errno = 0;
    show("self after", getpriority(PRIO_PROCESS, 0));
    errno = 0;
    show("raw call (20 - nice)", (int)syscall(SYS_getpriority, PRIO_PROCESS, 0));
    pthread_t t;
    pthread_create(&t, NULL, later, NULL);
    pthread_join(t, NULL);
    show("system(\"nice\")", system("nice"));
    show("set 5 by pid", setpriority(PRIO_PROCESS, getpid(), 5));
    errno = 0;
    show("self after", getpriority(PRIO_PROCESS, 0));
    errno = 0;
    show("nobody", getpriority(PRIO_PROCESS, 0x3fffffff));
    errno = 0;
    show("bad which", getpriority(7, 0));
    show("set, bad which", setpriority(7, 0, 1));
    show("set nobody", setpriority(PRIO_PROCESS, 0x3fffffff, 1));
    // I/O priorities (IOPRIO_WHO_PROCESS 1; class best-effort 2, level 4).
    show("ioprio self", (int)syscall(SYS_ioprio_get, 1, 0));
    show("ioprio set best-effort 4", (int)syscall(SYS_ioprio_set, 1, 0, (2 << 13) | 4));
    show("ioprio by pid", (int)syscall(SYS_ioprio_get, 1, getpid()));
    show("system(\"ionice\")", system("ionice"));
    show("ioprio nobody", (int)syscall(SYS_ioprio_get, 1, 0x3fffffff));
    show("ioprio bad which", (int)syscall(SYS_ioprio_get, 9, 0));
    return 0;
}
