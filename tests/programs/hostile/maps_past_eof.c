/* /proc/self/maps lists the pages of file mappings past the end of their file with the
 * protection the program gave them, as Linux (hrt listed them ---p and ---s). Until stop 98
 * hrt differed (found by a differential fuzzer of the memory calls). Prints what each step
 * gave; the same on any machine. */
// /proc/self/maps protections of file mappings whose pages lie past the file's end.
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/mman.h>
static void show(void *a, size_t n, const char *what) {
  char line[512]; FILE *f = fopen("/proc/self/maps", "r");
  while (fgets(line, sizeof line, f)) { unsigned long s, e; sscanf(line, "%lx-%lx", &s, &e);
    if (s < (unsigned long)a + n && e > (unsigned long)a) printf("%s: +%ld..+%ld %.4s\n", what, ((long)s - (long)a) / 4096, ((long)e - (long)a) / 4096, strchr(line, ' ') + 1); }
  fclose(f);
}
int main(void) {
  char path[] = "/tmp/hrt-file-map-XXXXXX"; int fd = mkstemp(path); unlink(path);
  char buf[4096]; memset(buf, 'f', sizeof buf); write(fd, buf, sizeof buf); /* 1 page */
  void *p = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  show(p, 4 * 4096, "private rw, 1-page file, 4 pages");
  void *s = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  show(s, 4 * 4096, "shared rw, 1-page file, 4 pages");
  void *q = mmap(NULL, 2 * 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 8 * 4096);
  show(q, 2 * 4096, "private r-x at offset 8 pages (wholly past EOF)");
  return 0;
}
