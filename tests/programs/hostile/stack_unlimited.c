// The main stack under a large or unlimited RLIMIT_STACK: set the limit, exec this program
// again (the new stack is sized from the limit, as Linux's execve sizes it), then recurse
// 64 MiB deep. Linux grows the stack as far as it goes; HRT gave it 8 MiB once.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static long deep(long left) {
    volatile char frame[4096];
    memset((char *)frame, (int)left, sizeof frame);
    if (left <= 1)
        return frame[0];
    return deep(left - 1) + frame[100];
}

int main(int argc, char **argv) {
    if (argc < 2) {
        const char *limits[] = {"unlimited", "2147483648"};
        for (int i = 0; i < 2; i++) {
            struct rlimit r = {RLIM_INFINITY, RLIM_INFINITY};
            if (i == 1)
                r.rlim_cur = strtoul(limits[i], NULL, 10);
            if (setrlimit(RLIMIT_STACK, &r)) {
                perror("setrlimit");
                return 1;
            }
            fflush(stdout);
            if (fork() == 0) {
                execl("/proc/self/exe", argv[0], limits[i], (char *)NULL);
                perror("execl");
                _exit(1);
            }
            int status;
            wait(&status);
            printf("stack limit %s: child exit %d\n", limits[i], status);
        }
        printf("stack unlimited: done\n");
        return 0;
    }
    long mib = 64;
    deep(mib * 256);
    printf("limit %s: recursed %ld MiB\n", argv[1], mib);
    return 0;
}
