/* mprotect making [anonymous page][shared page of a read-only descriptor] writable is EACCES,
 * and, as Linux changes mapping after mapping, the anonymous page before the refused one is
 * writable afterwards (hrt changed nothing). Until stop 98 hrt differed (found by a
 * differential fuzzer of the memory calls). Prints what each step gave; the same on any
 * machine. */
// mprotect over [anon PROT_NONE page][MAP_SHARED page of an O_RDONLY fd] with PROT_READ|PROT_WRITE:
// Linux fails with EACCES at the shared page, but the anonymous page before it has been changed already.
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
static sigjmp_buf jb; static volatile int sig, code;
static void h(int s, siginfo_t *si, void *u) { sig = s; code = si->si_code; siglongjmp(jb, 1); }
int main(void) {
  struct sigaction sa = {0}; sa.sa_sigaction = h; sa.sa_flags = SA_SIGINFO | SA_NODEFER; sigaction(SIGSEGV, &sa, 0); sigaction(SIGBUS, &sa, 0);
  char path[] = "/tmp/hrt-mprotect-XXXXXX"; int fd = mkstemp(path);
  char buf[4096]; memset(buf, 'x', sizeof buf); write(fd, buf, sizeof buf);
  int ro = open(path, O_RDONLY); unlink(path);
  unsigned char *a = mmap(NULL, 2 * 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mmap(a + 4096, 4096, PROT_READ, MAP_SHARED | MAP_FIXED, ro, 0);
  int r = mprotect(a, 2 * 4096, PROT_READ | PROT_WRITE);
  printf("mprotect = %d (%s)\n", r, r ? strerror(errno) : "ok");
  sig = 0; if (sigsetjmp(jb, 0) == 0) a[0] = 1;
  printf("write anon page 0: sig=%d code=%d\n", sig, code);
  return 0;
}
