/* Robust mutexes whose owner ends while holding them: the next taker's pthread_mutex_lock
 * returns EOWNERDEAD (the kernel walked the owner's robust list at its exit), and
 * pthread_mutex_consistent makes the mutex usable again.
 *   1. a thread locks and exits; main locks after joining it;
 *   2. a thread locks and exits while another thread waits in pthread_mutex_lock;
 *   3. a process-shared mutex in MAP_SHARED memory: a forked child locks and _exits, the
 *      parent locks after waitpid;
 *   4. as 3, with the parent already waiting in pthread_mutex_lock when the child _exits;
 *   5. as 3, held by a second thread of the child while its main thread _exits (exit_group);
 *   6. as 3, one held by the child's main thread and one by a second thread when the main
 *      thread execs (the program itself, which exits at once).
 * An alarm ends a run that hangs. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define FUTEX_WAITERS 0x80000000u

static const char *name(int r) {
    switch (r) {
    case 0: return "0";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ENOTRECOVERABLE: return "ENOTRECOVERABLE";
    case EDEADLK: return "EDEADLK";
    case EBUSY: return "EBUSY";
    default: return strerror(r);
    }
}

static void init_robust(pthread_mutex_t *m, int pshared) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    if (pshared)
        pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    int r = pthread_mutex_init(m, &a);
    if (r != 0) {
        printf("pthread_mutex_init: %s\n", name(r));
        exit(1);
    }
    pthread_mutexattr_destroy(&a);
}

/* Waits until somebody sleeps in the kernel on mutex `m` (glibc sets the waiters bit of its
 * word before it waits). */
static void wait_for_waiter(pthread_mutex_t *m) {
    volatile unsigned *word = (volatile unsigned *)&m->__data.__lock;
    while (!(*word & FUTEX_WAITERS))
        usleep(1000);
    usleep(20000); /* into the futex wait itself */
}

/* After the owner died: the taker's result, then consistent, unlock, lock again, unlock. */
static void recover(const char *label, pthread_mutex_t *m, int r) {
    printf("%s: lock after the owner died: %s\n", label, name(r));
    if (r == EOWNERDEAD) {
        printf("%s: consistent: %s\n", label, name(pthread_mutex_consistent(m)));
        printf("%s: unlock: %s\n", label, name(pthread_mutex_unlock(m)));
        printf("%s: lock again: %s\n", label, name(pthread_mutex_lock(m)));
    }
    printf("%s: unlock: %s\n", label, name(pthread_mutex_unlock(m)));
}

static pthread_mutex_t m1, m2;

static void *lock_and_exit(void *arg) {
    pthread_mutex_t *m = arg;
    int r = pthread_mutex_lock(m);
    if (r != 0)
        printf("owner thread: lock: %s\n", name(r));
    return NULL;
}

/* Case 2's owner: holds m2 until the waiter sleeps on it, then ends. */
static void *lock_wait_exit(void *arg) {
    (void)arg;
    int r = pthread_mutex_lock(&m2);
    if (r != 0)
        printf("owner thread: lock: %s\n", name(r));
    wait_for_waiter(&m2);
    return NULL;
}

static int waiter_result = -1;

static void *waiter(void *arg) {
    (void)arg;
    waiter_result = pthread_mutex_lock(&m2);
    recover("2 waiter", &m2, waiter_result);
    return NULL;
}

static void case_thread_exits(void) {
    init_robust(&m1, 0);
    pthread_t t;
    pthread_create(&t, NULL, lock_and_exit, &m1);
    pthread_join(t, NULL);
    recover("1", &m1, pthread_mutex_lock(&m1));
}

static void case_waiter_wakes(void) {
    init_robust(&m2, 0);
    pthread_t owner, w;
    pthread_create(&owner, NULL, lock_wait_exit, NULL);
    /* The owner holds it once its word names a tid. */
    while ((*(volatile int *)&m2.__data.__lock & 0x3fffffff) == 0)
        usleep(1000);
    pthread_create(&w, NULL, waiter, NULL);
    pthread_join(owner, NULL);
    pthread_join(w, NULL);
    printf("2: waiter woke with %s\n", name(waiter_result));
}

static pthread_mutex_t *shared_mutex(void) {
    pthread_mutex_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    init_robust(m, 1);
    return m;
}

static void reap(const char *label, pid_t pid) {
    int status;
    if (waitpid(pid, &status, 0) != pid) {
        perror("waitpid");
        exit(1);
    }
    printf("%s: child exit status %d\n", label, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
}

static void case_child_exits(void) {
    pthread_mutex_t *m = shared_mutex();
    pid_t pid = fork();
    if (pid == 0) {
        int r = pthread_mutex_lock(m);
        _exit(r == 0 ? 0 : 3);
    }
    reap("3", pid);
    recover("3", m, pthread_mutex_lock(m));
}

static void case_parent_waits(void) {
    pthread_mutex_t *m = shared_mutex();
    int p[2];
    if (pipe(p) != 0) {
        perror("pipe");
        exit(1);
    }
    pid_t pid = fork();
    if (pid == 0) {
        int r = pthread_mutex_lock(m);
        char c = 'x';
        if (write(p[1], &c, 1) != 1)
            _exit(4);
        wait_for_waiter(m);
        _exit(r == 0 ? 0 : 3);
    }
    char c;
    if (read(p[0], &c, 1) != 1) {
        perror("read");
        exit(1);
    }
    int r = pthread_mutex_lock(m);
    reap("4", pid);
    recover("4", m, r);
    close(p[0]);
    close(p[1]);
}

static pthread_mutex_t *m5;
static int p5[2];

static void *hold_forever(void *arg) {
    (void)arg;
    int r = pthread_mutex_lock(m5);
    char c = r == 0 ? 'x' : 'e';
    if (write(p5[1], &c, 1) != 1)
        _exit(4);
    for (;;)
        pause();
    return NULL;
}

static void case_child_thread_holds(void) {
    m5 = shared_mutex();
    if (pipe(p5) != 0) {
        perror("pipe");
        exit(1);
    }
    pid_t pid = fork();
    if (pid == 0) {
        pthread_t t;
        pthread_create(&t, NULL, hold_forever, NULL);
        char c;
        if (read(p5[0], &c, 1) != 1 || c != 'x')
            _exit(3);
        _exit(0); /* exit_group with the other thread still holding m5 */
    }
    reap("5", pid);
    recover("5", m5, pthread_mutex_lock(m5));
}

static pthread_mutex_t *m6;
static int p6[2];

static void *hold_until_exec(void *arg) {
    (void)arg;
    int r = pthread_mutex_lock(&m6[1]);
    char c = r == 0 ? 'x' : 'e';
    if (write(p6[1], &c, 1) != 1)
        _exit(4);
    for (;;)
        pause();
    return NULL;
}

static void case_child_execs(const char *self) {
    m6 = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m6 == MAP_FAILED || pipe(p6) != 0) {
        perror("mmap or pipe");
        exit(1);
    }
    init_robust(&m6[0], 1);
    init_robust(&m6[1], 1);
    pid_t pid = fork();
    if (pid == 0) {
        if (pthread_mutex_lock(&m6[0]) != 0)
            _exit(3);
        pthread_t t;
        pthread_create(&t, NULL, hold_until_exec, NULL);
        char c;
        if (read(p6[0], &c, 1) != 1 || c != 'x')
            _exit(3);
        execl(self, self, "exit", (char *)NULL);
        _exit(5);
    }
    reap("6", pid);
    recover("6 main's", &m6[0], pthread_mutex_lock(&m6[0]));
    recover("6 thread's", &m6[1], pthread_mutex_lock(&m6[1]));
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "exit") == 0)
        return 0;
    setvbuf(stdout, NULL, _IONBF, 0);
    alarm(30);
    case_thread_exits();
    case_waiter_wakes();
    case_child_exits();
    case_parent_waits();
    case_child_thread_holds();
    case_child_execs(argv[0]);
    printf("robust mutexes: done\n");
    return 0;
}
