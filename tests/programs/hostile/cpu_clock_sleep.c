/* A thread sleeps for 1 ms of process CPU time, while the other thread
 * sleeps 2.5 s (using no CPU): nothing runs, so the clock stands and the sleeper stays asleep;
 * then the other thread spins and the sleeper wakes. Under hrt the sleeper's own wake-up checks
 * (every 50 us) counted as process CPU time: it woke itself after about 1 s. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

static atomic_int woken;

static void *sleeper(void *arg) {
  (void)arg;
  /* Let the main thread reach its sleep first, and sleep relative to the clock (the call reads
   * it): no window remains in which a thread runs (or, under hrt, its vCPU waits for the host)
   * after the deadline was set. With an absolute deadline read by clock_gettime, a host busy
   * with other work could stall a vCPU for a millisecond in that window, and hrt counts such a
   * stall as running time. */
  struct timespec settle = {0, 200000000};
  nanosleep(&settle, NULL);
  struct timespec t = {0, 1000000};
  int r = clock_nanosleep(CLOCK_PROCESS_CPUTIME_ID, 0, &t, NULL);
  atomic_store(&woken, r == 0 ? 1 : -r);
  return NULL;
}

int main(void) {
  pthread_t t;
  pthread_create(&t, NULL, sleeper, NULL);
  struct timespec nap = {2, 500000000};
  nanosleep(&nap, NULL);
  printf("woken while nothing ran: %s\n", atomic_load(&woken) ? "yes" : "no");
  /* Spin until it wakes (the process clock moves with this thread's time). */
  volatile unsigned long n = 0;
  while (!atomic_load(&woken)) n++;
  pthread_join(t, NULL);
  printf("woken once this thread ran: %s\n", atomic_load(&woken) == 1 ? "yes" : "error");
  return 0;
}
