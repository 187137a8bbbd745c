/* A root program drops to nobody, then starts a program with posix_spawn (vfork and exec). Under
 * hrt --children hrt the child is a new `hrt`, which opened /dev/kvm with nobody's ids: "no
 * permission to open /dev/kvm", status 1. It now uses its parent's. */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "become_nobody.h"

extern char **environ;

int main(void) {
  int dropped = become_nobody();
  if (dropped)
    return dropped < 0 ? 0 : dropped;
  fflush(stdout);
  char *argv[] = {"id", "-u", NULL};
  pid_t pid;
  int r = posix_spawn(&pid, "/usr/bin/id", NULL, NULL, argv, environ);
  int st = 0;
  if (r == 0) waitpid(pid, &st, 0);
  printf("posix_spawn %d, status %d\n", r, st);
  return 0;
}
