/* A page moved out of a MADV_WIPEONFORK range with MREMAP_DONTUNMAP (arg 0; plain
 * MREMAP_FIXED: 1): the old range, still mapped, keeps wipe-on-fork, so a forked child reads
 * zero where the program wrote it again (hrt's child read the write). Until stop 98 hrt
 * differed (found by a differential fuzzer of the memory calls). Prints what each step gave;
 * the same on any machine. */
// MADV_WIPEONFORK range; one page moved out with mremap(MREMAP_DONTUNMAP) (and, arg 1: with plain MREMAP_FIXED).
// Pages written afterwards must read zero in a forked child (Linux keeps VM_WIPEONFORK on both the old and the new range).
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#define PG 4096
int main(int argc, char **argv) {
  int plain = argc > 1 && atoi(argv[1]);
  unsigned char *a = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  unsigned char *d = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  memset(a, 0x11, 4 * PG);
  printf("MADV_WIPEONFORK: %d\n", madvise(a, 4 * PG, MADV_WIPEONFORK));
  unsigned char *m = mremap(a + PG, PG, PG, MREMAP_MAYMOVE | MREMAP_FIXED | (plain ? 0 : MREMAP_DONTUNMAP), d);
  printf("mremap%s page 1: %s\n", plain ? "(FIXED)" : "(DONTUNMAP)", m == d ? "ok" : "failed");
  if (!plain) a[PG] = 0x21;   /* old page, still mapped after DONTUNMAP */
  d[0] = 0x22; a[0] = 0x23;
  fflush(stdout);
  pid_t p = fork();
  if (p == 0) { printf("child: page0=%02x", a[0]); if (!plain) printf(" old page1=%02x", a[PG]); printf(" moved page=%02x page2=%02x\n", d[0], a[2 * PG]); fflush(stdout); _exit(0); }
  waitpid(p, 0, 0);
  return 0;
}
