/* A MAP_FIXED shared mapping of a read-only descriptor with PROT_WRITE fails (EACCES) and
 * leaves the memory it would have replaced as it was. Until stop 98 hrt differed (found by a
 * differential fuzzer of the memory calls). Prints what each step gave; the same on any
 * machine. */
// A MAP_FIXED|MAP_SHARED mmap of a read-only fd with PROT_WRITE fails EACCES;
// Linux leaves the mapping that was there untouched.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <errno.h>
#include <signal.h>
#include <setjmp.h>
#include <sys/mman.h>
static sigjmp_buf jb; static volatile int code;
static void h(int s, siginfo_t *si, void *u) { code = si->si_code; siglongjmp(jb, 1); }
int main(void) {
  struct sigaction sa = {0}; sa.sa_sigaction = h; sa.sa_flags = SA_SIGINFO | SA_NODEFER; sigaction(SIGSEGV, &sa, 0);
  char path[] = "/tmp/hrt-shared-file-XXXXXX"; int fd = mkstemp(path); unlink(path);
  char buf[8192]; memset(buf, 'f', sizeof buf); write(fd, buf, sizeof buf);
  int ro = open("/proc/self/fd/3", O_RDONLY); (void)ro;
  char p2[64]; snprintf(p2, sizeof p2, "/proc/self/fd/%d", fd); ro = open(p2, O_RDONLY);
  unsigned char *a = mmap(NULL, 8 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(a, 0xab, 8 * 4096);
  void *r = mmap(a + 2 * 4096, 2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, ro, 0);
  printf("mmap fixed shared rdonly-fd PROT_WRITE: %s\n", r == MAP_FAILED ? strerror(errno) : "ok");
  for (int i = 0; i < 8; i++) {
    if (sigsetjmp(jb, 0)) { printf("page %d: SIGSEGV code %d\n", i, code); continue; }
    unsigned char v = a[i * 4096];
    printf("page %d: %02x\n", i, v);
  }
  return 0;
}
