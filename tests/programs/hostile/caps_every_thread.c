/* Credentials the program changes are every thread's, whichever CPU changes them: the keep-caps
 * flag over a setuid (hrt kept it in the guest: the host's setuid dropped the permitted set), a
 * dropped bounding-set capability seen by a host program started later (hrt dropped it on its main
 * thread only: the program's exec from another thread kept it), and last, in this process, pairs of
 * capsets, each followed by a write (which another thread of the monitor may serve), then
 * setuid(1000): hrt made each capset on the thread that served it and the others caught up lazily,
 * and glibc's set-id broadcast met a thread at an older capset's sets (no CAP_SETUID), whose refusal
 * made glibc abort hrt (SIGABRT) in some runs. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

struct hdr { unsigned version; int pid; };
struct dat { unsigned eff, prm, inh; };

static long capset2(unsigned eff, unsigned prm) {
  struct hdr h = {0x20080522, 0};
  struct dat d[2] = {{eff, prm, 0}, {0, 0, 0}};
  return syscall(SYS_capset, &h, d);
}

static void on_cpu(int cpu) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(cpu % sysconf(_SC_NPROCESSORS_ONLN), &s);
  sched_setaffinity(0, sizeof s, &s);
}

/* PR_SET_KEEPCAPS keeps the permitted set over setuid(1000), which lets the program raise an
 * effective capability from it and go back to root. */
static void keepcaps(void) {
  pid_t pid = fork();
  if (pid == 0) {
    on_cpu(1);
    int k = prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
    on_cpu(0);
    int g = prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0);
    int u = setuid(1000);
    struct hdr h = {0x20080522, 0};
    struct dat d[2];
    syscall(SYS_capget, &h, d);
    unsigned setuid_kept = d[0].prm >> 7 & 1;
    d[0].eff = d[0].prm;
    d[1].eff = d[1].prm;
    on_cpu(1);
    long r = syscall(SYS_capset, &h, d);
    int back = setuid(0);
    printf("keepcaps %d %d, setuid %d, CAP_SETUID kept %u, capset %ld, setuid(0) %d, uid %d\n", k, g, u, setuid_kept, r, back,
           (int)getuid());
    fflush(stdout);
    _exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  printf("keepcaps: %s %d\n", WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/* A dropped bounding-set capability is gone for a host program started afterwards (its
 * /proc/self/status CapBnd), whichever CPU dropped it. */
static void bounding_set(void) {
  pid_t pid = fork();
  if (pid == 0) {
    on_cpu(1);
    int r = prctl(PR_CAPBSET_DROP, 21, 0, 0, 0); /* CAP_SYS_ADMIN */
    int still = prctl(PR_CAPBSET_READ, 21, 0, 0, 0);
    printf("drop CAP_SYS_ADMIN %d, read %d\n", r, still);
    fflush(stdout);
    on_cpu(0);
    pid_t c = fork();
    if (c == 0) {
      execl("/bin/sh", "sh", "-c",
            "v=$(awk '/^CapBnd/ { print $2 }' /proc/self/status); echo \"host program: CAP_SYS_ADMIN in bounding set $(( (0x$v >> 21) & 1 ))\"",
            (char *)0);
      _exit(127);
    }
    int st;
    waitpid(c, &st, 0);
    _exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
}

static void capsets_then_setuid(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  printf("capsets");
  for (int i = 0; i < 20; i++) {
    printf(" %ld", capset2(1u << 0, 1u << 0 | 1u << 7)); /* effective CAP_CHOWN; permitted CAP_CHOWN, CAP_SETUID */
    printf(" %ld", capset2(1u << 7, 1u << 0 | 1u << 7)); /* effective CAP_SETUID */
  }
  printf(", setuid %d", setuid(1000));
  printf(", uid %d euid %d\n", (int)getuid(), (int)geteuid());
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (geteuid() != 0) {
    printf("needs root\n");
    return 0;
  }
  keepcaps();
  bounding_set();
  capsets_then_setuid();
  return 0;
}
