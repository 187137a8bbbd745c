/* /proc/self/task lists the program's threads, as on Linux: one directory per live thread,
 * named by its id (the main thread's is the pid), the count following threads that start and
 * end; a thread's directory opens (a path below it reads the process's files) and an id that
 * is no thread of the program is ENOENT; a thread waiting in a barrier shows state S. The output is the same on any number of CPUs. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WORKERS 5

static pthread_barrier_t started, done;
static long ids[WORKERS];

/* How many entries /proc/self/task has (not . and ..), and whether `want` (ids of threads that
 * must be listed, `n` of them) are all there. */
static int listing(const long *want, int n, int *all_there) {
    DIR *d = opendir("/proc/self/task");
    if (!d) {
        printf("opendir /proc/self/task: %s\n", strerror(errno));
        exit(1);
    }
    int count = 0, found = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        count++;
        for (int i = 0; i < n; i++)
            found += atol(e->d_name) == want[i];
        if (e->d_type != DT_DIR)
            printf("entry %s is not a directory\n", e->d_name);
    }
    closedir(d);
    *all_there = found == n;
    return count;
}

/* The state field of a stat file (the first after the name's closing parenthesis). */
static char state_in(const char *path) {
    char line[512] = {0};
    FILE *f = fopen(path, "r");
    if (!f)
        return '?';
    if (!fgets(line, sizeof line, f))
        line[0] = 0;
    fclose(f);
    char *close = strrchr(line, ')');
    return close && close[1] == ' ' ? close[2] : '?';
}

/* Whether a status file's State line says sleeping. */
static int status_sleeping(const char *path) {
    char line[256];
    int found = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        found |= strncmp(line, "State:\tS (sleeping)", 19) == 0;
    fclose(f);
    return found;
}

static void *worker(void *arg) {
    ids[(long)arg] = syscall(SYS_gettid);
    pthread_barrier_wait(&started);
    pthread_barrier_wait(&done);
    return NULL;
}

int main(void) {
    long main_id = getpid();
    int there;
    int n = listing(&main_id, 1, &there);
    printf("alone: %d thread(s) listed, the main thread's id among them: %s\n", n, there ? "yes" : "no");

    pthread_barrier_init(&started, NULL, WORKERS + 1);
    pthread_barrier_init(&done, NULL, WORKERS + 1);
    pthread_t t[WORKERS];
    for (long i = 0; i < WORKERS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    pthread_barrier_wait(&started);
    n = listing(ids, WORKERS, &there);
    printf("with %d workers: %d listed, every worker's id among them: %s\n", WORKERS, n, there ? "yes" : "no");

    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld", ids[0]);
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    printf("a worker's directory opens: %s\n", fd >= 0 ? "yes" : "no");
    if (fd >= 0) {
        int st = openat(fd, "stat", O_RDONLY);
        printf("its stat opens relative to it: %s\n", st >= 0 ? "yes" : "no");
        if (st >= 0)
            close(st);
        close(fd);
    }
    snprintf(path, sizeof path, "/proc/self/task/%ld/comm", main_id);
    fd = open(path, O_RDONLY);
    printf("the main thread's comm opens: %s\n", fd >= 0 ? "yes" : "no");
    if (fd >= 0)
        close(fd);

    /* A worker waiting in the barrier sleeps (state S in its stat and status), while the
     * thread reading is running (R). Waited for: the worker may not be asleep yet. */
    char st[64];
    snprintf(st, sizeof st, "/proc/self/task/%ld/stat", ids[1]);
    char state = '?';
    for (int tries = 0; tries < 500 && state != 'S'; tries++) {
        state = state_in(st);
        if (state != 'S')
            usleep(10000);
    }
    printf("a waiting worker's state: %c\n", state);
    printf("the reading thread's own state: %c\n", state_in("/proc/thread-self/stat"));
    snprintf(st, sizeof st, "/proc/self/task/%ld/status", ids[1]);
    printf("its status says sleeping: %s\n", status_sleeping(st) ? "yes" : "no");

    pthread_barrier_wait(&done);
    for (int i = 0; i < WORKERS; i++)
        pthread_join(t[i], NULL);
    n = listing(&main_id, 1, &there);
    printf("after the joins: %d listed, the main thread's among them: %s\n", n, there ? "yes" : "no");
    /* An id no thread of the program has: its ids are the pid and the ids it handed out. */
    snprintf(path, sizeof path, "/proc/self/task/%d", 999999);
    errno = 0;
    fd = open(path, O_RDONLY | O_DIRECTORY);
    printf("an id of no thread: %s\n", fd < 0 && errno == ENOENT ? "ENOENT" : "opened");
    return 0;
}
