/* A signal whose default action ends the process, sent by the program to itself while the
 * sending thread blocks it and another thread (asleep) does not: Linux ends the whole process
 * inside the sender's call, so nothing after it runs and the status is the signal's. Each way
 * of sending (kill, tgkill to the sleeping thread, sigqueue) 10 times, in forked children
 * whose ends the parent reports. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile pid_t sleeper_tid;

static void *sleeper(void *arg) {
    sleeper_tid = gettid();
    struct timespec ts = {5, 0};
    clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
    return NULL;
}

static void child(int how) {
    pthread_t t;
    pthread_create(&t, NULL, sleeper, NULL); /* before the block: its mask stays empty */
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &s, NULL);
    while (!sleeper_tid)
        usleep(100);
    usleep(2000); /* the sleeper is in its sleep */
    if (how == 0)
        kill(getpid(), SIGUSR2);
    else if (how == 1)
        syscall(SYS_tgkill, getpid(), sleeper_tid, SIGUSR2);
    else
        sigqueue(getpid(), SIGUSR2, (union sigval){.sival_int = 1});
    printf("after the signal\n"); /* natively never */
    fflush(stdout);
    _exit(0);
}

int main(void) {
    const char *names[] = {"kill", "tgkill", "sigqueue"};
    for (int how = 0; how < 3; how++) {
        int killed = 0, other = 0;
        for (int i = 0; i < 10; i++) {
            fflush(stdout);
            pid_t p = fork();
            if (p == 0)
                child(how);
            int st;
            waitpid(p, &st, 0);
            if (WIFSIGNALED(st) && WTERMSIG(st) == SIGUSR2)
                killed++;
            else
                other++;
        }
        printf("%s: killed by SIGUSR2 %d times, otherwise %d\n", names[how], killed, other);
    }
    return 0;
}
