/* A priority-inheritance mutex shared between processes (PTHREAD_PRIO_INHERIT,
 * PTHREAD_PROCESS_SHARED, in MAP_SHARED memory): three processes add to a counter under it
 * (read, yield, write back: any overlap loses updates), a trylock of a lock another process holds
 * is EBUSY, a timed lock times out. Under hrt FUTEX_LOCK_PI on memory shared with other
 * processes was ENOSYS, which glibc's pthread_mutex_lock does not check: processes were inside
 * the lock together and updates were lost. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 20000

struct shared {
  pthread_mutex_t lock;
  volatile long counter;
  volatile int held;
};

static void add(struct shared *s) {
  for (int i = 0; i < ROUNDS; i++) {
    pthread_mutex_lock(&s->lock);
    long c = s->counter;
    if (i % 64 == 0) sched_yield();
    s->counter = c + 1;
    pthread_mutex_unlock(&s->lock);
  }
}

int main(void) {
  struct shared *s = mmap(NULL, sizeof *s, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT);
  int r = pthread_mutex_init(&s->lock, &a);
  printf("init: %s\n", strerror(r));

  pid_t kids[2];
  for (int k = 0; k < 2; k++) {
    kids[k] = fork();
    if (kids[k] == 0) {
      add(s);
      _exit(0);
    }
  }
  add(s);
  for (int k = 0; k < 2; k++) waitpid(kids[k], NULL, 0);
  printf("counter: %ld of %d\n", s->counter, 3 * ROUNDS);

  /* Held by a child: this process's trylock is EBUSY, a timed lock times out. */
  s->held = 0;
  pid_t holder = fork();
  if (holder == 0) {
    pthread_mutex_lock(&s->lock);
    s->held = 1;
    while (s->held == 1) sched_yield();
    pthread_mutex_unlock(&s->lock);
    _exit(0);
  }
  while (s->held == 0) sched_yield();
  printf("trylock while another process holds it: %s\n", strerror(pthread_mutex_trylock(&s->lock)));
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_nsec += 50 * 1000 * 1000;
  if (t.tv_nsec >= 1000000000) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000;
  }
  printf("timed lock: %s\n", strerror(pthread_mutex_timedlock(&s->lock, &t)));
  s->held = 2;
  printf("lock once it lets go: %s\n", strerror(pthread_mutex_lock(&s->lock)));
  pthread_mutex_unlock(&s->lock);
  waitpid(holder, NULL, 0);
  return 0;
}
