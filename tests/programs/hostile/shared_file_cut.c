/* Anonymous memory put over part of a shared file mapping (mremap FIXED: 0, mmap FIXED: 1,
 * munmap then mmap NOREPLACE: 2) is the program's after the file shrinks (it was hidden with
 * the file's pages). Until stop 98 hrt differed (found by a differential fuzzer of the memory
 * calls). Prints what each step gave; the same on any machine. */
// An anonymous page moved with mremap(MREMAP_FIXED) over part of a MAP_SHARED file mapping
// must not be affected by a later ftruncate() of that file.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>
#include <setjmp.h>
#include <sys/mman.h>
static sigjmp_buf jb; static volatile int sig, code;
static void h(int s, siginfo_t *si, void *u) { sig = s; code = si->si_code; siglongjmp(jb, 1); }
int main(int argc, char **argv) {
  int how = argc > 1 ? atoi(argv[1]) : 0; /* 0 mremap FIXED, 1 mmap FIXED anon, 2 munmap then mmap NOREPLACE */
  struct sigaction sa = {0}; sa.sa_sigaction = h; sa.sa_flags = SA_SIGINFO | SA_NODEFER; sigaction(SIGSEGV, &sa, 0); sigaction(SIGBUS, &sa, 0);
  char path[] = "/tmp/hrt-shared-file-XXXXXX"; int fd = mkstemp(path); unlink(path);
  ftruncate(fd, 4 * 4096);
  unsigned char *f = mmap(NULL, 4 * 4096, PROT_READ, MAP_SHARED, fd, 0);
  unsigned char *x;
  if (how == 0) {
    unsigned char *a = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    a[0] = 42;
    x = mremap(a, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED, f + 2 * 4096);
  } else if (how == 2) {
    munmap(f + 2 * 4096, 4096);
    x = mmap(f + 2 * 4096, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    x[0] = 42;
  } else {
    x = mmap(f + 2 * 4096, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    x[0] = 42;
  }
  printf("%s over page 2: %s\n", how == 2 ? "munmap+mmap(NOREPLACE) anon" : how ? "mmap(MAP_FIXED) anon" : "mremap(FIXED) anon", x == f + 2 * 4096 ? "ok" : "failed");
  ftruncate(fd, 0);
  sig = 0; int v = -1;
  if (sigsetjmp(jb, 0) == 0) v = x[0];
  printf("after ftruncate(0): read the anon page: value %d sig=%d code=%d\n", v, sig, code);
  sig = 0; if (sigsetjmp(jb, 0) == 0) x[1] = 1;
  printf("write the anon page: sig=%d code=%d\n", sig, code);
  return 0;
}
