/* FS_IOC_FIEMAP maps a file's extents (filefrag, sparse-aware copies): a file with a hole
 * between two written blocks, asked for the count alone and then for the extents (logical
 * offsets and lengths, last-extent flag), and an array the program cannot write. Under hrt the
 * request was not forwarded: a silent ENOTTY. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

int main(void) {
  char path[] = "./hrt-fiemap-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return 1;
  unlink(path);
  char block[4096];
  memset(block, 'x', sizeof block);
  pwrite(fd, block, sizeof block, 0);
  pwrite(fd, block, sizeof block, 1 << 20);
  fsync(fd);

  struct fiemap count = {.fm_start = 0, .fm_length = FIEMAP_MAX_OFFSET, .fm_flags = FIEMAP_FLAG_SYNC, .fm_extent_count = 0};
  int r = ioctl(fd, FS_IOC_FIEMAP, &count);
  if (r < 0) {
    printf("FIEMAP: %s\n", strerror(errno));
    return 0;
  }
  printf("extents: %u\n", count.fm_mapped_extents);

  size_t size = sizeof(struct fiemap) + 8 * sizeof(struct fiemap_extent);
  struct fiemap *map = calloc(1, size);
  map->fm_length = FIEMAP_MAX_OFFSET;
  map->fm_flags = FIEMAP_FLAG_SYNC;
  map->fm_extent_count = 8;
  r = ioctl(fd, FS_IOC_FIEMAP, map);
  printf("FIEMAP of 8: %d, mapped %u, count %u\n", r, map->fm_mapped_extents, map->fm_extent_count);
  for (unsigned i = 0; i < map->fm_mapped_extents; i++)
    printf("  logical %llu length %llu last %d\n", (unsigned long long)map->fm_extents[i].fe_logical,
           (unsigned long long)map->fm_extents[i].fe_length, !!(map->fm_extents[i].fe_flags & FIEMAP_EXTENT_LAST));

  /* An extent array that runs into a page the program may not write: EFAULT. */
  char *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mprotect(page + 4096, 4096, PROT_READ);
  struct fiemap *edge = (struct fiemap *)(page + 4096 - sizeof(struct fiemap) - sizeof(struct fiemap_extent));
  memset(edge, 0, sizeof *edge);
  edge->fm_length = FIEMAP_MAX_OFFSET;
  edge->fm_extent_count = 4;
  r = ioctl(fd, FS_IOC_FIEMAP, edge);
  printf("an array into a read-only page: %s\n", r < 0 ? strerror(errno) : "ok");
  return 0;
}
