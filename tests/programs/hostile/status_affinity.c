/* Cpus_allowed_list in /proc/self/status, /proc/thread-self/status and another thread's
 * /proc/self/task/<tid>/status follows each thread's sched_setaffinity, as on Linux: under hrt
 * it showed every vCPU whatever the thread's mask (hwloc-bind, taskset and numactl users read
 * it). Needs two CPUs; prints only the lists of masks it set. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void show(const char *what, const char *path) {
    FILE *f = fopen(path, "r");
    char line[512];
    if (!f) {
        printf("%s: cannot open %s\n", what, path);
        return;
    }
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "Cpus_allowed_list:", 18))
            printf("%s: %s", what, line);
    fclose(f);
}

static void pin(int first, int last) {
    cpu_set_t s;
    CPU_ZERO(&s);
    for (int c = first; c <= last; c++)
        CPU_SET(c, &s);
    if (sched_setaffinity(0, sizeof s, &s) != 0)
        perror("sched_setaffinity");
}

static pid_t worker_tid;
static pthread_barrier_t pinned, shown;

static void *worker(void *arg) {
    (void)arg;
    worker_tid = syscall(SYS_gettid);
    pin(0, 0);
    pthread_barrier_wait(&pinned);
    pthread_barrier_wait(&shown);
    return NULL;
}

int main(void) {
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        printf("needs two CPUs\n");
        return 0;
    }
    pin(1, 1);
    show("process after pinning to 1", "/proc/self/status");
    show("thread-self after pinning to 1", "/proc/thread-self/status");
    pin(0, 1);
    show("process after pinning to 0-1", "/proc/self/status");
    pin(1, 1);
    pthread_barrier_init(&pinned, NULL, 2);
    pthread_barrier_init(&shown, NULL, 2);
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_barrier_wait(&pinned);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)worker_tid);
    show("worker pinned to 0", path);
    show("main, still on 1", "/proc/thread-self/status");
    pthread_barrier_wait(&shown);
    pthread_join(t, NULL);
    return 0;
}
