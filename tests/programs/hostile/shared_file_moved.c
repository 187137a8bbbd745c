/* A part of a shared file mapping grown and moved by mremap keeps its protection, not that
 * another part was given (it became writable, and wrote the file). Until stop 98 hrt differed
 * (found by a differential fuzzer of the memory calls). Prints what each step gave; the same
 * on any machine. */
// MAP_SHARED file mapping PROT_READ (8 pages); pages 5-7 mprotect'ed RW; page 1 grown 1->2 pages with mremap(MAYMOVE)
// (cannot grow in place), then moved with MREMAP_FIXED. Linux: the moved pages are r--s (PROT_READ); hrt gives them rw-s.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>
#include <setjmp.h>
#include <sys/mman.h>
#define PG 4096UL
static sigjmp_buf jb; static volatile int sig, code;
static void h(int s, siginfo_t *si, void *u) { sig = s; code = si->si_code; siglongjmp(jb, 1); }
static void show(const char *w, unsigned char *a, size_t n) {
  char line[512]; FILE *f = fopen("/proc/self/maps", "r");
  while (fgets(line, sizeof line, f)) { unsigned long s, e; sscanf(line, "%lx-%lx", &s, &e);
    if (s < (unsigned long)a + n && e > (unsigned long)a) printf("  %s: maps +%ld..+%ld %.4s\n", w, ((long)s - (long)a) / (long)PG, ((long)e - (long)a) / (long)PG, strchr(line, ' ') + 1); }
  fclose(f);
}
static void wr(const char *w, unsigned char *p) { sig = 0; code = 0; if (sigsetjmp(jb, 0) == 0) *(volatile unsigned char *)p = 'W'; printf("  %s: write sig=%d code=%d\n", w, sig, code); }
int main(int argc, char **argv) {
  int mp = argc > 1 ? atoi(argv[1]) : 1, fixed = argc > 2 ? atoi(argv[2]) : 1;
  struct sigaction sa = {0}; sa.sa_sigaction = h; sa.sa_flags = SA_SIGINFO | SA_NODEFER; sigaction(SIGSEGV, &sa, 0);
  char path[] = "/tmp/hrt-shared-file-XXXXXX"; int fd = mkstemp(path); unlink(path);
  ftruncate(fd, 16 * PG);
  unsigned char *f = mmap(NULL, 8 * PG, PROT_READ, MAP_SHARED, fd, 0);
  if (mp) printf("mprotect pages 5-7 RW: %d\n", mprotect(f + 5 * PG, 3 * PG, PROT_READ | PROT_WRITE));
  unsigned char *m = mremap(f + PG, PG, 2 * PG, MREMAP_MAYMOVE);
  printf("mremap page 1, 1->2 pages MAYMOVE: %s\n", m == MAP_FAILED ? "failed" : m == f + PG ? "in place" : "moved");
  show("grown", m, 2 * PG); wr("grown page 0", m);
  if (fixed) {
    unsigned char *dst = mmap(NULL, 4 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *d = mremap(m, 2 * PG, 2 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, dst + PG);
    printf("mremap FIXED: %s\n", d == dst + PG ? "ok" : "failed");
    show("moved", d, 2 * PG); wr("moved page 0", d); wr("moved page 1", d + PG);
  }
  char c = 0; pread(fd, &c, 1, PG); printf("file byte at page 1: '%c'\n", c ? c : '0');
  return 0;
}
