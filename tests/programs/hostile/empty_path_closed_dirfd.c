// An empty path with a directory descriptor the program does not have: ENOENT, as Linux's
// getname refuses the empty name before the descriptor is looked at (hrt said EBADF), EBADF
// with AT_EMPTY_PATH and for readlinkat, which take an empty name.
#define _GNU_SOURCE
#include <stdio.h>
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
static void said(const char *w, long r) { printf("%-28s %ld %s\n", w, r, r < 0 ? strerror(errno) : ""); }
int main(void){
  struct stat st;
  said("fstatat closed empty", fstatat(99, "", &st, 0));
  said("fstatat closed empty EMPTY", fstatat(99, "", &st, AT_EMPTY_PATH));
  said("faccessat closed empty", faccessat(99, "", F_OK, 0));
  said("openat closed empty", openat(99, "", O_RDONLY));
  said("fchmodat closed empty", fchmodat(99, "", 0644, 0));
  said("mkdirat closed empty", mkdirat(99, "", 0755));
  said("symlinkat closed empty", symlinkat("x", 99, ""));
  said("linkat new closed empty", linkat(AT_FDCWD, "/etc/hostname", 99, "", 0));
  said("unlinkat closed empty", unlinkat(99, "", 0));
  said("readlinkat closed empty", readlinkat(99, "", (char[8]){0}, 8));
  said("fstatat cwd empty", fstatat(AT_FDCWD, "", &st, 0));
  int f = open("/etc/hostname", O_RDONLY);
  said("fstatat file empty EMPTY", fstatat(f, "", &st, AT_EMPTY_PATH));
  said("fstatat file empty", fstatat(f, "", &st, 0));
  printf("empty path closed dirfd: done\n");
  return 0;
}
