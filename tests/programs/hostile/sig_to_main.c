// A thread sends a signal to the main thread (tgkill with the main thread's id, which is the
// pid) while main waits in pthread_join; main has made no signal call of its own before
// sigaction. The handler runs on the main thread and the join still completes.
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile pid_t handler_tid;

static void on_usr1(int sig) {
    (void)sig;
    handler_tid = gettid();
}

static void *sender(void *arg) {
    (void)arg;
    syscall(SYS_tgkill, getpid(), getpid(), SIGUSR1);
    while (handler_tid == 0)
        sched_yield();
    return NULL;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t th;
    pthread_create(&th, NULL, sender, NULL);
    pthread_join(th, NULL);
    printf("handled on the main thread=%d\n", handler_tid == getpid());
    return 0;
}
