/* Two threads on two vCPUs each sleep 0.5 ms a few thousand times (nanosleep), as LLVM's
 * OpenMP test omp_for_schedule_static does while it waits for its other thread. Each sleep
 * leaves its vCPU idle for about as long as the idle loop polls before it halts (`--idle auto`
 * on a host with no spare CPU: poll 1 ms, then halt), so the idle loop is often interrupted
 * on its way to the halt by the timer that wakes the sleeper. The kernel used to preempt the
 * idle thread there for the woken thread; when that thread slept again, the idle thread
 * resumed where it was and halted without arming the timer for the new sleeper, which then
 * never woke (the program hung in about one run in three). Prints one line when both are done. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define SLEEPS 2000

static void *sleeper(void *arg) {
    struct timespec ts = {0, 500000};
    for (int i = 0; i < SLEEPS; i++)
        nanosleep(&ts, NULL);
    return arg;
}

int main(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, sleeper, NULL) != 0)
        return 1;
    sleeper(NULL);
    pthread_join(t, NULL);
    printf("both threads slept %d times\n", SLEEPS);
    return 0;
}
