/* A shared file mapping made read-only, its first two pages made executable ("exec") or
 * writable ("write"), the file truncated to 0 and grown again: the other pages keep their own
 * protection (read-only: no execution, no write), and /proc/self/maps lists them so. Until stop
 * 98 hrt gave the whole mapping the last protection once the file grew over its pages: code
 * ran there, and writes through read-only pages reached the file; maps listed ---s (found by a
 * differential fuzzer of the memory calls). Prints what each step gave; the same on any
 * machine. */
// Shared file mapping PROT_READ; its first 2 pages mprotect'ed RX; file truncated to 0,
// then grown again by pwrite. Pages 2.. must stay r-- (not executable).
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
static void show(unsigned char *a, size_t n) {
  char line[512]; FILE *f = fopen("/proc/self/maps", "r");
  while (fgets(line, sizeof line, f)) { unsigned long s, e; sscanf(line, "%lx-%lx", &s, &e);
    if (s < (unsigned long)a + n && e > (unsigned long)a) printf("  maps +%ld..+%ld %.4s\n", ((long)s - (long)a) / 4096, ((long)e - (long)a) / 4096, strchr(line, ' ') + 1); }
  fclose(f);
}
static void probe(unsigned char *a, int pg, int x) {
  sig = 0; code = 0; volatile unsigned char v = 0;
  if (sigsetjmp(jb, 0) == 0) { if (x == 1) ((void (*)(void))(a + pg * 4096))(); else if (x == 2) a[pg * 4096] = 0xc3; else v = a[pg * 4096]; }
  printf("  %s page %d: %s sig=%d code=%d\n", x == 2 ? "write" : x ? "exec" : "read", pg, sig ? "fault" : "ok", sig, code); (void)v;
}
int main(int argc, char **argv) {
  int write = argc > 1 && strcmp(argv[1], "write") == 0;
  struct sigaction sa = {0}; sa.sa_sigaction = h; sa.sa_flags = SA_SIGINFO | SA_NODEFER; sigaction(SIGSEGV, &sa, 0); sigaction(SIGBUS, &sa, 0);
  char path[] = "/tmp/hrt-shared-file-XXXXXX"; int fd = mkstemp(path); unlink(path);
  static char buf[8 * 4096]; memset(buf, 0xc3, sizeof buf); pwrite(fd, buf, sizeof buf, 0); /* 'ret' bytes */
  unsigned char *a = mmap(NULL, 8 * 4096, PROT_READ, MAP_SHARED, fd, 0);
  printf("mprotect(+0, 2 pages, %s) = %d\n", write ? "RW" : "RX", mprotect(a, 2 * 4096, PROT_READ | (write ? PROT_WRITE : PROT_EXEC)));
  printf("ftruncate(0) = %d\n", ftruncate(fd, 0));
  printf("pwrite 8 pages = %ld\n", (long)pwrite(fd, buf, sizeof buf, 0));
  show(a, 8 * 4096);
  if (write) { probe(a, 1, 2); probe(a, 2, 2); probe(a, 3, 2); probe(a, 7, 2); }
  else { probe(a, 1, 1); probe(a, 2, 0); probe(a, 2, 1); probe(a, 5, 1); }
  show(a, 8 * 4096);
  return 0;
}
