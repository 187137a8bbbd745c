/* readlink("/proc/thread-self") names the calling thread: "<pid>/task/<tid>" with the tid
 * gettid gives, in the main thread and in another; and the directory it names is that
 * thread's (its comm is the thread's own name). Under hrt the link named the host thread of
 * the monitor that served the call (the kernel's proc selftest thread-self).
 * Usage: proc_thread_self_link */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *look(void *arg) {
    const char *who = arg;
    pthread_setname_np(pthread_self(), who);
    char want[64], got[64] = {0}, path[128], comm[32] = {0};
    snprintf(want, sizeof want, "%d/task/%ld", getpid(), (long)syscall(SYS_gettid));
    ssize_t n = readlink("/proc/thread-self", got, sizeof got - 1);
    if (n >= 0)
        got[n] = 0;
    snprintf(path, sizeof path, "/proc/%s/comm", got);
    int fd = open(path, O_RDONLY);
    ssize_t m = fd >= 0 ? read(fd, comm, sizeof comm - 1) : -1;
    if (m > 0 && comm[m - 1] == '\n')
        comm[m - 1] = 0;
    printf("%s: link %s, its comm %s\n", who, n >= 0 && strcmp(want, got) == 0 ? "names this thread" : "is wrong",
           m > 0 ? comm : "unreadable");
    if (fd >= 0)
        close(fd);
    return NULL;
}

int main(void) {
    look("main-thread");
    pthread_t t;
    pthread_create(&t, NULL, look, "side-thread");
    pthread_join(t, NULL);
    char tiny[3] = {0};
    long r = readlink("/proc/thread-self", tiny, 2);
    printf("a 2-byte buffer gets %ld bytes\n", r);
    return 0;
}
