/* Vectored writes to a thread's comm file rename it as write() does: each buffer is a write of
 * its own (the last one names the thread; musl's stdio flushes with writev, so its
 * fopen/fputs/fclose of /proc/self/comm goes this way); a positioned write is ESPIPE. Under hrt
 * only write() renamed: writev, pwrite and pwritev were EBADF and the name stayed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static const char *answer(long r, int e) { return r < 0 ? strerror(e) : "ok"; }

static void name_of(pid_t tid, char *out) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
  FILE *f = fopen(path, "r");
  out[0] = 0;
  if (f && fgets(out, 32, f)) out[strcspn(out, "\n")] = 0;
  if (f) fclose(f);
}

static pthread_barrier_t ready, named;
static pid_t worker_tid;

static void *worker(void *arg) {
  (void)arg;
  worker_tid = (pid_t)syscall(SYS_gettid);
  pthread_barrier_wait(&ready);
  pthread_barrier_wait(&named);
  return NULL;
}

int main(void) {
  char name[32];
  int fd = open("/proc/self/comm", O_WRONLY);
  long r = write(fd, "first", 5);
  prctl(PR_GET_NAME, name);
  printf("write %ld, name %s\n", r, name);

  struct iovec two[2] = {{"second", 6}, {"third-and-long-name", 19}};
  r = writev(fd, two, 2);
  prctl(PR_GET_NAME, name);
  printf("writev of two buffers %ld, name %s\n", r, name);

  struct iovec trailing[2] = {{"fourth", 6}, {"", 0}};
  r = writev(fd, trailing, 2);
  prctl(PR_GET_NAME, name);
  printf("writev with an empty last buffer %ld, name %s\n", r, name);

  r = pwrite(fd, "fifth", 5, 0);
  int e = errno;
  printf("pwrite: %s\n", answer(r, e));
  r = pwritev(fd, two, 2, 0);
  e = errno;
  printf("pwritev: %s\n", answer(r, e));
  close(fd);

  pthread_t t;
  pthread_barrier_init(&ready, NULL, 2);
  pthread_barrier_init(&named, NULL, 2);
  pthread_create(&t, NULL, worker, NULL);
  pthread_barrier_wait(&ready);
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)worker_tid);
  fd = open(path, O_WRONLY);
  struct iovec one[1] = {{"worker-b", 8}};
  r = writev(fd, one, 1);
  close(fd);
  name_of(worker_tid, name);
  printf("writev to another thread's comm %ld, its name %s\n", r, name);
  pthread_barrier_wait(&named);
  pthread_join(t, NULL);
  return 0;
}
