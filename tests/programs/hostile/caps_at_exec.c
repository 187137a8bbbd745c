/* Capabilities and saved ids across an exec, as Linux computes them for a file without
 * capabilities (capabilities(7)): permitted' = ambient, or inheritable | bounding (| ambient) for
 * root (real or effective uid 0, without SECBIT_NOROOT); effective' = permitted' if the effective
 * uid is 0, else ambient; the saved ids become the effective ones; keep-caps is cleared. Each case
 * runs in a forked child that execs this program to show what it got (under hrt --children hrt
 * the exec is the kernel's own, whose new program kept the old one's capabilities and ids). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

struct hdr { unsigned version; int pid; };
struct dat { unsigned eff, prm, inh; };

static void get(struct dat d[2]) {
  struct hdr h = {0x20080522, 0};
  syscall(SYS_capget, &h, d);
}

static long set(struct dat d[2]) {
  struct hdr h = {0x20080522, 0};
  return syscall(SYS_capset, &h, d);
}

static unsigned long long both(unsigned lo, unsigned hi) { return (unsigned long long)hi << 32 | lo; }

static void show(const char *what) {
  struct dat d[2];
  get(d);
  unsigned long long amb = 0;
  for (int c = 0; c < 64; c++)
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1) amb |= 1ULL << c;
  uid_t r, e, s;
  getresuid(&r, &e, &s);
  printf("%-28s eff %011llx prm %011llx inh %011llx amb %011llx keepcaps %d ids %d %d %d\n", what,
         both(d[0].eff, d[1].eff), both(d[0].prm, d[1].prm), both(d[0].inh, d[1].inh), amb,
         prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0), (int)r, (int)e, (int)s);
}

static void run(const char *name, void (*setup)(void)) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    setup();
    execl("/proc/self/exe", "caps_at_exec", "show", name, (char *)0);
    perror("exec");
    _exit(127);
  }
  int st;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) printf("%s: status %#x\n", name, st);
}

static void nothing(void) {}

static void drop_bounding(void) { prctl(PR_CAPBSET_DROP, 13, 0, 0, 0); } /* CAP_NET_RAW */

static void drop_effective(void) {
  struct dat d[2];
  get(d);
  d[0].eff = d[1].eff = 0;
  set(d);
}

static void keepcaps_setuid(void) {
  prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
  setresuid(1000, 1000, 1000);
}

static void ambient_chown(void) {
  struct dat d[2];
  get(d);
  d[0].inh |= 1u << 0; /* CAP_CHOWN */
  set(d);
  prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
  setresuid(1000, 1000, 1000);
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, 0, 0, 0);
}

static void effective_uid_only(void) { seteuid(1000); }

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 3 && strcmp(argv[1], "show") == 0) {
    show(argv[2]);
    return 0;
  }
  if (geteuid() != 0) {
    printf("needs root\n");
    return 0;
  }
  show("before");
  run("plain exec", nothing);
  run("bounding set without NET_RAW", drop_bounding);
  run("effective set emptied", drop_effective);
  run("keepcaps, setuid 1000", keepcaps_setuid);
  run("ambient CHOWN, setuid 1000", ambient_chown);
  run("seteuid 1000", effective_uid_only);
  return 0;
}
