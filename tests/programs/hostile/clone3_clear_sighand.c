/* clone3's CLONE_CLEAR_SIGHAND: the new process's handlers become SIG_DFL, ignored signals stay
 * ignored, and no action keeps its flags or mask; the parent's stay as they were. As a fork
 * and as a vfork-style child (CLONE_VM | CLONE_VFORK), and the combinations Linux refuses.
 * The legacy clone reads its flags as an int: the same bit there is no request. hrt answered
 * ENOSYS (and a line) for CLONE_CLEAR_SIGHAND. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

#ifndef CLONE_CLEAR_SIGHAND
#define CLONE_CLEAR_SIGHAND 0x100000000ULL
#endif

static void on_usr1(int sig) { (void)sig; }

/* Bit i: something about the actions this process sees differs from a cleared table. */
static int cleared_state(void) {
    struct sigaction a;
    int bad = 0;
    sigaction(SIGUSR1, NULL, &a);
    if (a.sa_handler != SIG_DFL) bad |= 1;
    if (a.sa_flags & ~SA_RESTORER) bad |= 2;
    if (!sigisemptyset(&a.sa_mask)) bad |= 4;
    sigaction(SIGUSR2, NULL, &a);
    if (a.sa_handler != SIG_IGN) bad |= 8;
    if (a.sa_flags & ~SA_RESTORER) bad |= 16;
    return bad;
}

static struct clone_args args_for(uint64_t flags, void *stack, size_t size) {
    struct clone_args args;
    memset(&args, 0, sizeof args);
    args.flags = flags;
    args.exit_signal = SIGCHLD;
    args.stack = (uintptr_t)stack;
    args.stack_size = size;
    return args;
}

/* A fork-like clone3 (no stack of its own): the child returns here as from fork. */
static long clone3(uint64_t flags) {
    struct clone_args args = args_for(flags, NULL, 0);
    return syscall(SYS_clone3, &args, sizeof args);
}

static int child_main(void) { return cleared_state(); }

/* clone3 with a stack of the child's own: the child calls `child_main` there and exits with
 * its value, never returning into this function's frame (which the parent owns). */
static long clone3_on_stack(uint64_t flags, void *stack, size_t size) {
    struct clone_args args = args_for(flags, stack, size);
    long ret;
    __asm__ volatile("syscall\n"
                     "test %%rax, %%rax\n"
                     "jnz 1f\n"
                     "call *%[fn]\n"
                     "mov %%eax, %%edi\n"
                     "mov $60, %%eax\n"
                     "syscall\n"
                     "ud2\n"
                     "1:\n"
                     : "=a"(ret)
                     : "a"((long)SYS_clone3), "D"(&args), "S"(sizeof args), [fn] "r"(child_main)
                     : "rcx", "r11", "memory");
    if (ret < 0) {
        errno = -ret;
        return -1;
    }
    return ret;
}

static int wait_code(long pid) {
    int status;
    if (pid < 0) return -errno;
    if (waitpid(pid, &status, 0) != pid) return -1000;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

static char stack[64 * 1024] __attribute__((aligned(16)));

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct sigaction a;
    memset(&a, 0, sizeof a);
    a.sa_handler = on_usr1;
    a.sa_flags = SA_RESTART | SA_NODEFER;
    sigaddset(&a.sa_mask, SIGTERM);
    sigaction(SIGUSR1, &a, NULL);
    memset(&a, 0, sizeof a);
    a.sa_handler = SIG_IGN;
    a.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &a, NULL);
    printf("parent before: %d\n", cleared_state());

    long pid = clone3(CLONE_CLEAR_SIGHAND);
    if (pid == 0) _exit(cleared_state());
    printf("fork-like child: %d\n", wait_code(pid));

    pid = clone3_on_stack(CLONE_VM | CLONE_VFORK | CLONE_CLEAR_SIGHAND, stack, sizeof stack);
    printf("vfork-like child: %d\n", wait_code(pid));
    pid = clone3_on_stack(CLONE_VM | CLONE_VFORK, stack, sizeof stack);
    printf("vfork-like child without the flag: %d\n", wait_code(pid));

    pid = clone3(0);
    if (pid == 0) _exit(cleared_state());
    printf("child without the flag: %d\n", wait_code(pid));

    long r = clone3_on_stack(CLONE_CLEAR_SIGHAND | CLONE_SIGHAND | CLONE_VM, stack, sizeof stack);
    printf("with CLONE_SIGHAND: %s\n", r < 0 ? strerrorname_np(errno) : "made");

    /* The legacy clone: the bit lies beyond its int of flags. */
    pid = syscall(SYS_clone, (unsigned long)(CLONE_CLEAR_SIGHAND | SIGCHLD), 0, 0, 0, 0);
    if (pid == 0) _exit(cleared_state());
    printf("legacy clone with the bit: %d\n", wait_code(pid));

    printf("parent after: %d\n", cleared_state());
    printf("clear_sighand done\n");
    return 0;
}
