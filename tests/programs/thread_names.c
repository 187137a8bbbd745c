/* Thread names (prctl PR_SET_NAME / PR_GET_NAME, which pthread_setname_np and
 * pthread_getname_np use for the calling thread; /proc/thread-self/comm, and /proc/self/comm
 * for the main thread's, the process's) belong to each thread, as on Linux: a worker
 * that renames itself leaves the main thread's (the process's) name alone, a new thread starts
 * with its creator's name as it is then, and a later rename of the main thread does not reach
 * a thread already made; another thread's name set with pthread_setname_np (a write to its
 * /proc/self/task/<tid>/comm) is that thread's; a process a named thread forks has its name. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_barrier_t both;

/* The first line of `path`, without its newline ("?" if it cannot be read). */
static void first_line(const char *path, char *out, size_t size) {
    snprintf(out, size, "?");
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(out, (int)size, f))
        out[strcspn(out, "\n")] = 0;
    fclose(f);
}

static void show(const char *who) {
    char name[17] = {0}, own[32], process[32];
    prctl(PR_GET_NAME, name);
    first_line("/proc/thread-self/comm", own, sizeof own);
    first_line("/proc/self/comm", process, sizeof process);
    printf("%s: '%s', thread-self/comm '%s', self/comm '%s'\n", who, name, own, process);
    fflush(stdout);
}

static void *grandchild(void *arg) {
    (void)arg;
    show("thread made by the renamed worker");
    return NULL;
}

static void *worker(void *arg) {
    (void)arg;
    show("worker at start");
    pthread_setname_np(pthread_self(), "worker-one");
    show("worker after renaming itself");
    pthread_t t;
    pthread_create(&t, NULL, grandchild, NULL);
    pthread_join(t, NULL);
    /* A process forked by the named worker has the worker's name. */
    pid_t child = fork();
    if (child == 0) {
        show("process forked by the renamed worker");
        _exit(0);
    }
    waitpid(child, NULL, 0);
    return NULL;
}

static void *early(void *arg) {
    (void)arg;
    pthread_barrier_wait(&both); /* main renames itself meanwhile */
    pthread_barrier_wait(&both);
    show("thread made before main's rename (or named by main)");
    return NULL;
}

int main(void) {
    prctl(PR_SET_NAME, "names-main");
    show("main");
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
    show("main after the worker's rename");

    pthread_barrier_init(&both, NULL, 2);
    pthread_create(&t, NULL, early, NULL);
    pthread_barrier_wait(&both);
    prctl(PR_SET_NAME, "main-renamed");
    pthread_barrier_wait(&both);
    pthread_join(t, NULL);

    /* Another thread's name, set and read by main (glibc writes and reads its comm file). */
    pthread_create(&t, NULL, early, NULL);
    pthread_barrier_wait(&both);
    int set = pthread_setname_np(t, "set-by-main");
    char read_back[17] = {0};
    int got = pthread_getname_np(t, read_back, sizeof read_back);
    printf("main names another thread: %d, reads it back: %d '%s'\n", set, got, read_back);
    pthread_barrier_wait(&both);
    pthread_join(t, NULL);
    show("main renamed");
    /* Longer than 15 bytes: cut to 15, as Linux does. */
    prctl(PR_SET_NAME, "a-name-longer-than-fifteen");
    show("main with a long name");
    return 0;
}
