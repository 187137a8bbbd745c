/* setuid(1000) makes a process non-dumpable, which leaves its /proc/<pid> entries root's;
 * PR_SET_DUMPABLE 1 gives them back to the user. Under hrt the flag was kept in the guest only:
 * `hrt`'s /proc/<pid> stayed root's, and the program could not open its own oom_score_adj for
 * writing or its io file by pid. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

static void look(const char *when) {
  char status[64], oom[64], io[64];
  struct stat st;
  snprintf(status, sizeof status, "/proc/%d/status", getpid());
  snprintf(oom, sizeof oom, "/proc/%d/oom_score_adj", getpid());
  snprintf(io, sizeof io, "/proc/%d/io", getpid());
  int owner = stat(status, &st) == 0 ? (int)st.st_uid : -1;
  int w = open(oom, O_WRONLY), r = open(io, O_RDONLY);
  printf("%s: dumpable %d, /proc/<pid>/status owner %d, oom_score_adj for writing %s, io %s\n", when,
         prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), owner, w < 0 ? "refused" : "opened", r < 0 ? "refused" : "opened");
  if (w >= 0) close(w);
  if (r >= 0) close(r);
}

int main(void) {
  if (geteuid() != 0) {
    printf("needs root\n");
    return 0;
  }
  if (setuid(1000) != 0) {
    perror("setuid");
    return 1;
  }
  look("after setuid(1000)");
  prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
  look("after PR_SET_DUMPABLE 1");
  return 0;
}
