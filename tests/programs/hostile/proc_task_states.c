/* 55 threads wait on a futex; the program reads each one's state from
 * /proc/PID/task/TID/stat until all show S (sleeping), as LTP's futex tests wait for their
 * threads. Under hrt only the first 32 threads' states were known: the others showed the
 * monitor's own R for good, and such a test waited forever. */
#define _GNU_SOURCE
#include <dirent.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define THREADS 55
static int word;

static void *waiter(void *arg) {
    (void)arg;
    while (__atomic_load_n(&word, __ATOMIC_SEQ_CST) == 0)
        syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
    return NULL;
}

/* How many of the other threads show S. */
static int sleeping(void) {
    char dir[64], path[384];
    snprintf(dir, sizeof dir, "/proc/%d/task", getpid());
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d))) {
        if (atoi(e->d_name) == 0 || atoi(e->d_name) == getpid())
            continue;
        snprintf(path, sizeof path, "%s/%s/stat", dir, e->d_name);
        FILE *f = fopen(path, "r");
        char state = '?';
        if (f && fscanf(f, "%*d %*s %c", &state) == 1 && state == 'S')
            n++;
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return n;
}

int main(void) {
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, waiter, NULL);
    int n = 0;
    for (int tries = 0; tries < 3000 && (n = sleeping()) != THREADS; tries++)
        usleep(10000);
    printf("%d of %d waiting threads show S in /proc/PID/task/TID/stat\n", n, THREADS);
    __atomic_store_n(&word, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, &word, FUTEX_WAKE_PRIVATE, THREADS, NULL, NULL, 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    return 0;
}
