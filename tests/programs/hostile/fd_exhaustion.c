/* A program that fills its descriptor table (dup until EMFILE, with RLIMIT_NOFILE's soft limit
 * equal to its hard one, as `ulimit -n 200` sets them) must leave the monitor the descriptors it
 * needs for itself: before, `stat`, `access` and `open` by path then failed with EMFILE (the
 * path walk's own lookups), and the first thread on a second vCPU ended `hrt` ("cannot create
 * vCPU 1: Too many open files"). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static void *thread(void *arg) { return arg; }

int main(void) {
    struct rlimit rl;
    getrlimit(RLIMIT_NOFILE, &rl);
    int n = 0, last = -1, err = 0;
    while ((last = dup(0)) >= 0)
        n++;
    err = errno;
    printf("dup until %s, %s\n", strerror(err), n > 50 ? "more than 50 first" : "too few");
    struct stat st;
    printf("stat: %s\n", stat("/etc/passwd", &st) == 0 ? "ok" : strerror(errno));
    printf("access: %s\n", access("/etc/passwd", R_OK) == 0 ? "ok" : strerror(errno));
    int fd = open("/etc/passwd", O_RDONLY);
    printf("open with the table full: %s\n", fd >= 0 ? "a descriptor" : strerror(errno));
    close(n + 2); /* one of the dups: room for one */
    fd = open("/etc/passwd", O_RDONLY);
    printf("open after a close: %s\n", fd >= 0 ? "a descriptor" : strerror(errno));
    pthread_t t[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&t[i], NULL, thread, (void *)(long)(40 + i));
    long sum = 0;
    for (int i = 0; i < 3; i++) {
        void *r;
        pthread_join(t[i], &r);
        sum += (long)r;
    }
    printf("threads: %ld\nfd exhaustion: done\n", sum);
    return 5;
}
