/* setfsuid/setfsgid decide which ids file calls use: a root-only file cannot be opened with a
 * file-system uid of 1000, a new file is owned by the file-system ids, and the process becomes
 * undumpable. Under hrt they were left at the effective ids (with a line). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void) {
  if (geteuid() != 0) {
    printf("needs root\n");
    return 0;
  }
  char dir[] = "/tmp/hrt-fsids-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  chmod(dir, 0777);
  char secret[64], made[64];
  snprintf(secret, sizeof secret, "%s/secret", dir);
  snprintf(made, sizeof made, "%s/made", dir);
  int fd = open(secret, O_CREAT | O_WRONLY, 0600);
  close(fd);

  int before = setfsuid(1000);
  printf("setfsuid(1000) -> %d, now %d\n", before, setfsuid(-1));
  before = setfsgid(2000);
  printf("setfsgid(2000) -> %d, now %d\n", before, setfsgid(-1));
  fd = open(secret, O_RDONLY);
  printf("open a root 0600 file: %s\n", fd < 0 ? strerror(errno) : "opened");
  if (fd >= 0) close(fd);
  fd = open(made, O_CREAT | O_WRONLY, 0644);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0) printf("a new file's owner %d group %d\n", (int)st.st_uid, (int)st.st_gid);
  if (fd >= 0) close(fd);
  printf("dumpable %d\n", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
  printf("ids still %d %d\n", (int)geteuid(), (int)getegid());

  before = setfsuid(0);
  printf("setfsuid(0) -> %d, setfsgid(0) -> %d\n", before, setfsgid(0));
  fd = open(secret, O_RDONLY);
  printf("open it again: %s\n", fd < 0 ? strerror(errno) : "opened");
  if (fd >= 0) close(fd);
  unlink(secret);
  unlink(made);
  rmdir(dir);
  return 0;
}
