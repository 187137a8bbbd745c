/* A forked child SIGKILLed while its two threads each hold a robust, process-shared mutex:
 * the parent's pthread_mutex_lock returns EOWNERDEAD for both, whether it locks after
 * waitpid or is already waiting in the lock when the child dies, and so does a trylock right
 * after waitpid (Linux marks the mutexes before the parent hears of the death), as on Linux
 * (under hrt the child's `hrt` died with no kernel code run: the parent waited forever; then
 * the trylock saw EBUSY in 2 of 6 runs). */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t *m;
static int ready[2];

static void *second_holder(void *arg) {
    (void)arg;
    pthread_mutex_lock(&m[1]);
    write(ready[1], "t", 1);
    for (;;) pause();
    return NULL;
}

static void round_(int wait_first, int try) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    for (int i = 0; i < 2; i++) pthread_mutex_init(&m[i], &a);
    if (pipe(ready)) return;
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        pthread_t t;
        pthread_mutex_lock(&m[0]);
        pthread_create(&t, NULL, second_holder, NULL);
        write(ready[1], "m", 1);
        for (;;) pause();
    }
    char b[2];
    for (int got = 0; got < 2;) {
        ssize_t n = read(ready[0], b + got, 2 - got);
        if (n > 0) got += n;
    }
    int st = 0;
    pid_t killer = -1;
    if (wait_first) {
        kill(c, SIGKILL);
        waitpid(c, &st, 0);
    } else {
        /* Killed once the parent waits in the lock (either way the lock must end so). */
        killer = fork();
        if (killer == 0) {
            usleep(100000);
            kill(c, SIGKILL);
            _exit(0);
        }
    }
    for (int i = 0; i < 2; i++) {
        int r = try ? pthread_mutex_trylock(&m[i]) : pthread_mutex_lock(&m[i]);
        printf("%s: mutex %d: %s\n", try ? "trylock after waitpid" : wait_first ? "locked after waitpid" : "waiting when killed", i,
               r == EOWNERDEAD ? "EOWNERDEAD" : strerror(r));
        if (r == EOWNERDEAD) pthread_mutex_consistent(&m[i]);
        pthread_mutex_unlock(&m[i]);
    }
    if (!wait_first) {
        waitpid(c, &st, 0);
        waitpid(killer, NULL, 0);
    }
    printf("child: %s %d\n", WIFSIGNALED(st) ? "signal" : "exit", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    /* The mutexes are usable again. */
    printf("relocked: %d %d\n", pthread_mutex_lock(&m[0]), pthread_mutex_lock(&m[1]));
    pthread_mutex_unlock(&m[0]);
    pthread_mutex_unlock(&m[1]);
    close(ready[0]);
    close(ready[1]);
}

int main(void) {
    m = mmap(NULL, 2 * sizeof *m, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 1;
    round_(1, 0);
    round_(0, 0);
    round_(1, 1);
    return 0;
}
