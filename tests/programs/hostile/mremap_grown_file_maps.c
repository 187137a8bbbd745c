/* A private file mapping grown by mremap (generated from a minimized fuzz log; offsets
 * relative to a 40 MiB PROT_NONE reservation): the grown pages, readable, are listed with
 * their protection in /proc/self/maps (hrt listed them ---p). Until stop 98 hrt differed
 * (found by a differential fuzzer of the memory calls). Prints what each step gave; the same
 * on any machine. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <unistd.h>
#include <fcntl.h>
#include <signal.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <sys/wait.h>
#define PG 4096UL
#define NPG 10240
static uint8_t *arena, *reg; static int fd_rw, fd_ro, fd_scr; static uint8_t big[4 << 20];
static sigjmp_buf jb; static volatile int fsig, fcode;
static void h(int s, siginfo_t *si, void *u) { fsig = s; fcode = si->si_code; siglongjmp(jb, 1); }
static int touch(uint8_t *a, size_t n, int w) { /* first and last byte of each page */
  fsig = 0; fcode = 0; if (sigsetjmp(jb, 0)) return fsig;
  for (size_t p = 0; p < n; p += PG) { size_t e = p + PG - 1 < n ? p + PG - 1 : n - 1;
    if (w) { a[p] = 1; a[e] = 1; } else { (void)*(volatile uint8_t *)(a + p); (void)*(volatile uint8_t *)(a + e); } }
  return 0;
}
static void report(int p) {
  static char buf[1 << 20]; int fd = open("/proc/self/maps", O_RDONLY); size_t tot = 0; long r;
  while ((r = read(fd, buf + tot, sizeof buf - 1 - tot)) > 0)
    tot += r;
  close(fd);
  buf[tot] = 0;
  char perm[5] = "----"; unsigned long x = (unsigned long)arena + p * PG;
  for (char *l = buf; *l;) { char *nl = strchr(l, '\n'); if (nl) *nl = 0; unsigned long a, b; char pp[8];
    if (sscanf(l, "%lx-%lx %7s", &a, &b, pp) == 3 && a <= x && x < b)
      memcpy(perm, pp, 4);
    if (!nl)
      break;
    l = nl + 1;
  }
  int s = touch(arena + p * PG + 100, 1, 0); int c = s ? fcode : 0;
  int b = s ? -1 : arena[p * PG + 100];
  int ws = touch(arena + p * PG + 100, 1, 1); int wc = ws ? fcode : 0;
  printf("page %d: maps %s, read: sig=%d code=%d byte=%d, write: sig=%d code=%d\n", p, perm, s, c, b, ws, wc);
}
#define AD(off) (arena + (off))
static void *MR(void *q) { if (q != MAP_FAILED && !((uint8_t *)q >= arena && (uint8_t *)q < arena + NPG * PG)) reg = q; return q; }
int main(void) {
  struct sigaction sa = {0}; sa.sa_sigaction = h; sa.sa_flags = SA_SIGINFO | SA_NODEFER; sigaction(SIGSEGV, &sa, 0); sigaction(SIGBUS, &sa, 0);
  char fp[] = "/tmp/hrt-file-map-XXXXXX"; fd_rw = mkstemp(fp); fd_ro = open(fp, O_RDONLY); unlink(fp);
  char sp[] = "/tmp/hrt-file-map-XXXXXX"; fd_scr = mkstemp(sp); unlink(sp);
  memset(big, 0x5a, sizeof big);
  /* a 40 MiB PROT_NONE reservation aligned to 2 MiB: all offsets below are relative to it */
  uint8_t *r = mmap((void *)0x40000000UL, NPG * PG + (2u << 20), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  arena = (uint8_t *)(((uintptr_t)r + (2u << 20) - 1) & ~((uintptr_t)(2u << 20) - 1));
  if (arena > r) munmap(r, arena - r);
  munmap(arena + NPG * PG, (r + NPG * PG + (2u << 20)) - (arena + NPG * PG));
  pwrite(fd_rw, big, 632226, 0); /* file size */
  MR(mmap(AD(22433792), 1216512, 5, 0x12, fd_rw, 20480));
  MR(mremap(AD(22736896), 8192, 65536, 3, AD(6471680)));
  report(1581);
  report(1583);
  report(1585);
  return 0;
}
