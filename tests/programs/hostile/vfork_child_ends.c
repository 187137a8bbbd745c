/* A vfork child before its exec is a process of its own, as on Linux: a fault of its own
 * (NULL write, ud2, abort, division by zero) ends only it, and its parent's wait reports the
 * signal (hrt ended the whole program); an exit signal above 64 in a legacy clone is sent to
 * nobody (hrt's kernel panicked on it: index out of bounds). And clone3's checks that came
 * late or not at all: an exit signal above 64, a stack outside user space, set_tid without a
 * size, an unwritable CLONE_PIDFD address (EINVAL, EFAULT; hrt made a child or crashed). The
 * child keeps its parent's alternate signal stack. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void crash(int how) {
    volatile int zero = 0;
    switch (how) {
    case 0:
        *(volatile int *)0 = 1;
        break;
    case 1:
        __builtin_trap();
        break;
    case 2:
        abort();
    case 3:
        zero = 1 / zero;
        break;
    }
    _exit(0);
}

static void report(const char *what, pid_t p) {
    int st = 0;
    pid_t w = waitpid(p, &st, __WALL);
    if (w != p)
        printf("%s: wait %s\n", what, strerror(errno));
    else if (WIFSIGNALED(st))
        printf("%s: child killed by signal %d\n", what, WTERMSIG(st));
    else
        printf("%s: child exited %d\n", what, WEXITSTATUS(st));
}

static long clone3_(struct clone_args *a) {
    return syscall(SYS_clone3, a, sizeof *a);
}

static void clone3_case(const char *what, struct clone_args a) {
    long r = clone3_(&a);
    if (r == 0)
        _exit(0);
    if (r > 0) {
        report(what, r);
        return;
    }
    printf("%s: %s\n", what, strerror(errno));
}

static char stack[65536];

static int child_fn(void *arg) {
    (void)arg;
    return 3;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *crashes[] = {"NULL write", "ud2", "abort", "division by zero"};
    for (int i = 0; i < 4; i++) {
        pid_t p = vfork();
        if (p == 0)
            crash(i);
        report(crashes[i], p);
    }

    /* A legacy clone's exit signal may be any byte; above 64 nothing is sent. */
    for (int sig = 65; sig <= 255; sig += 95) {
        pid_t p = clone(child_fn, stack + sizeof stack, CLONE_VM | CLONE_VFORK | sig, NULL);
        char what[48];
        snprintf(what, sizeof what, "vfork clone, exit signal %d", sig);
        if (p < 0)
            printf("%s: %s\n", what, strerror(errno));
        else
            report(what, p);
    }

    struct clone_args a;
    memset(&a, 0, sizeof a);
    a.exit_signal = 65;
    clone3_case("clone3 exit signal 65", a);
    memset(&a, 0, sizeof a);
    a.flags = CLONE_VM | CLONE_VFORK;
    a.exit_signal = SIGCHLD;
    a.stack = 0xffff800000000000ull;
    a.stack_size = 4096;
    clone3_case("clone3 stack in kernel space", a);
    a.stack = (uintptr_t)stack;
    a.stack_size = UINT64_MAX - 100;
    clone3_case("clone3 stack size wrapping", a);
    memset(&a, 0, sizeof a);
    pid_t tids[1] = {0};
    a.set_tid = (uintptr_t)tids;
    a.exit_signal = SIGCHLD;
    clone3_case("clone3 set_tid without a size", a);
    memset(&a, 0, sizeof a);
    a.flags = CLONE_PIDFD;
    a.pidfd = 8;
    a.exit_signal = SIGCHLD;
    clone3_case("clone3 pidfd at an unwritable address", a);

    /* A vfork child keeps its parent's alternate signal stack (hrt gave it none). */
    static char alt[65536];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0};
    sigaltstack(&ss, NULL);
    pid_t p = vfork();
    if (p == 0) {
        stack_t mine;
        sigaltstack(NULL, &mine);
        _exit(mine.ss_sp == alt && mine.ss_size == sizeof alt && mine.ss_flags == 0 ? 7 : 8);
    }
    report("vfork child's alternate stack (exit 7: the parent's)", p);
    printf("parent done\n");
    return 0;
}
