/* The alternate signal stack as on Linux: the frame's uc_stack holds the flags as set (0 for a
 * stack never set); rt_sigreturn restores the alternate stack from uc_stack (a handler's own
 * sigaltstack undone, a stack or SS_DISABLE written into uc_stack applied, nothing changed by
 * a handler running on the alternate stack); a stack of sysconf(_SC_MINSIGSTKSZ) bytes holds
 * a frame; nested handlers that overflow the alternate stack end the process with SIGSEGV (hrt placed frames over live ones and hung); SIGSYS is taken
 * among the synchronous signals first. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

static char *st1, *st2;
static volatile int flags_seen = -1;

static void note_flags(int s, siginfo_t *si, void *u) {
    (void)s;
    (void)si;
    flags_seen = ((ucontext_t *)u)->uc_stack.ss_flags;
}

static void install_st2(int s) {
    (void)s;
    stack_t ss = {.ss_sp = st2, .ss_size = 65536};
    sigaltstack(&ss, NULL);
}

static void uc_to_st2(int s, siginfo_t *si, void *u) {
    (void)s;
    (void)si;
    ucontext_t *uc = u;
    uc->uc_stack.ss_sp = st2;
    uc->uc_stack.ss_size = 65536;
    uc->uc_stack.ss_flags = 0;
}

static void uc_disable(int s, siginfo_t *si, void *u) {
    (void)s;
    (void)si;
    ((ucontext_t *)u)->uc_stack.ss_flags = SS_DISABLE;
}

static void show(const char *what) {
    stack_t o;
    sigaltstack(NULL, &o);
    printf("%s: flags %d, stack %s\n", what, o.ss_flags,
           o.ss_sp == st1 ? "st1" : o.ss_sp == st2 ? "st2" : o.ss_sp ? "other" : "none");
}

static void handle(int sig, void (*h)(int, siginfo_t *, void *), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = h;
    sa.sa_flags = SA_SIGINFO | flags;
    sigaction(sig, &sa, NULL);
}

static volatile int depth;

static void deeper(int s) {
    depth++;
    if (depth < 1000)
        raise(s);
}

static void order_handler(int s) {
    printf(" %d", s);
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    st1 = malloc(65536);
    st2 = malloc(65536);
    stack_t one = {.ss_sp = st1, .ss_size = 65536};

    handle(SIGUSR1, note_flags, 0);
    raise(SIGUSR1);
    printf("uc_stack flags, no stack ever set: %d\n", flags_seen);
    sigaltstack(&one, NULL);
    handle(SIGUSR1, note_flags, SA_ONSTACK);
    raise(SIGUSR1);
    printf("uc_stack flags, handler on the stack: %d\n", flags_seen);

    signal(SIGUSR1, install_st2);
    raise(SIGUSR1);
    show("after a handler replaced st1 by st2");
    sigaltstack(&one, NULL);
    handle(SIGUSR2, uc_to_st2, 0);
    raise(SIGUSR2);
    show("after a handler wrote st2 into uc_stack");
    sigaltstack(&one, NULL);
    handle(SIGUSR2, uc_disable, 0);
    raise(SIGUSR2);
    show("after a handler wrote SS_DISABLE into uc_stack");
    sigaltstack(&one, NULL);
    handle(SIGUSR2, uc_to_st2, SA_ONSTACK);
    raise(SIGUSR2);
    show("after a handler on st1 wrote st2 into uc_stack");

    /* An alternate stack of sysconf(_SC_MINSIGSTKSZ) bytes holds a handler's frame, nothing
     * written below it (hrt said 2,048, less than its AVX-512 frame: SIGSEGV). */
    long min = sysconf(_SC_MINSIGSTKSZ);
    size_t guard = 8192;
    unsigned char *mem = malloc(guard + min);
    memset(mem, 0xAA, guard + min);
    stack_t least = {.ss_sp = mem + guard, .ss_size = min};
    sigaltstack(&least, NULL);
    handle(SIGUSR1, note_flags, SA_ONSTACK);
    flags_seen = -1;
    raise(SIGUSR1);
    int below = 0;
    for (size_t i = 0; i < guard; i++)
        below += mem[i] != 0xAA;
    printf("stack of _SC_MINSIGSTKSZ: handler ran %d, bytes written below it %d, _SC_SIGSTKSZ >= it %d\n",
           flags_seen != -1, below, sysconf(_SC_SIGSTKSZ) >= min);
    sigaltstack(&one, NULL);

    /* SIGSYS with the synchronous signals: taken before SIGHUP and SIGINT. */
    sigset_t all, none;
    sigemptyset(&none);
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    int sigs[] = {SIGHUP, SIGINT, SIGSYS, SIGTRAP, SIGUSR1};
    for (int i = 0; i < 5; i++) {
        signal(sigs[i], order_handler);
        raise(sigs[i]);
    }
    printf("order taken:");
    sigprocmask(SIG_SETMASK, &none, NULL);
    printf("\n");

    /* Nested handlers on a 16 KiB alternate stack until it overflows. */
    pid_t c = fork();
    if (c == 0) {
        stack_t small = {.ss_sp = malloc(16384), .ss_size = 16384};
        sigaltstack(&small, NULL);
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = deeper;
        sa.sa_flags = SA_ONSTACK | SA_NODEFER;
        sigaction(SIGUSR1, &sa, NULL);
        raise(SIGUSR1);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    printf("alternate stack overflow: %s %d\n", WIFSIGNALED(st) ? "killed by signal" : "exited",
           WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    return 0;
}
