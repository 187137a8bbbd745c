/* A shared file mapping's pages keep their own protection when the file is truncated and grown
 * again: pages left read-only stay so (they became writable). Until stop 98 hrt differed
 * (found by a differential fuzzer of the memory calls). Prints what each step gave; the same
 * on any machine. */
// Shared file mapping PROT_READ; its first 2 pages mprotect'ed RX; file truncated to 0,
// then grown again by pwrite. RW variant: pages 2.. must stay read-only.
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
static void probe(unsigned char *a, int pg, int x) {
  sig = 0; code = 0; volatile unsigned char v = 0;
  if (sigsetjmp(jb, 0) == 0) { if (x == 1) ((void (*)(void))(a + pg * 4096))(); else if (x == 2) a[pg * 4096] = 0xc3; else v = a[pg * 4096]; }
  printf("  %s page %d: %s sig=%d code=%d\n", x == 2 ? "write" : x ? "exec" : "read", pg, sig ? "fault" : "ok", sig, code); (void)v;
}
int main(void) {
  struct sigaction sa = {0}; sa.sa_sigaction = h; sa.sa_flags = SA_SIGINFO | SA_NODEFER; sigaction(SIGSEGV, &sa, 0); sigaction(SIGBUS, &sa, 0);
  char path[] = "/tmp/hrt-shared-file-XXXXXX"; int fd = mkstemp(path); unlink(path);
  static char buf[8 * 4096]; memset(buf, 0xc3, sizeof buf); pwrite(fd, buf, sizeof buf, 0); /* 'ret' bytes */
  unsigned char *a = mmap(NULL, 8 * 4096, PROT_READ, MAP_SHARED, fd, 0);
  printf("mprotect(+0, 2 pages, RW) = %d\n", mprotect(a, 2 * 4096, PROT_READ | PROT_WRITE));
  printf("ftruncate(0) = %d\n", ftruncate(fd, 0));
  printf("pwrite 8 pages = %ld\n", (long)pwrite(fd, buf, sizeof buf, 0));
  probe(a, 1, 2); probe(a, 2, 2); probe(a, 3, 2); probe(a, 7, 2);
  return 0;
}
