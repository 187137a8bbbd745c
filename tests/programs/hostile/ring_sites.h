/* What ring_regsite.c and ring_varsite.c share: the drivers of their calls, restart, spin and
 * resume cases (rewritten system-call sites exercised from threads, signal handlers and
 * resumptions). */
#ifndef HOSTILE_RING_SITES_H
#define HOSTILE_RING_SITES_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "handler.h"

enum { ROUNDS = 3, SPINNERS = 3, SIGNALS = 30 };

static void pause_ms(long ms) {
    struct timespec ts = {0, ms * 1000000};
    nanosleep(&ts, NULL);
}

/* HRT rewrites system-call sites only once a program has made its first 64 calls
 * (`WARM_UP` in kernel/src/linux/rewrite.rs): made here first, so that the cases below
 * exercise sites rewritten at their first call, as they would in a longer program (through
 * getuid, which no case counts). */
static void warm_up_rewriting(void) {
    for (int i = 0; i < 64; i++)
        (void)getuid();
}

/* SIGUSR1 handlers run so far (each handler adds one). */
static atomic_int handled;

/* Runs `calls` (which returns how many of its results were wrong) on two threads at once;
 * returns the sum. */
static long (*thread_calls)(void);

static void *call_thread(void *arg) {
    (void)arg;
    return (void *)thread_calls();
}

static long on_two_threads(long (*calls)(void)) {
    thread_calls = calls;
    pthread_t t[2];
    void *bad[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, call_thread, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], &bad[i]);
    return (long)bad[0] + (long)bad[1];
}

/* The restart case's reader: read r of 2 * ROUNDS reads one byte from `fd` into `c`. */
static long (*read_one)(int r, int fd, char *c);
static int read_fds[2];
static atomic_int reading;
/* Whether restart_reads spins (rather than sleeps) while the reader gets to its next read:
 * the reader's first call through a site then finds the other CPU busy, and the kernel
 * patches the site later, in the handler's calls through it (restart_patched). */
static int spin_for_reader;
static atomic_int main_spins;

static void *reader(void *arg) {
    (void)arg;
    for (int r = 0; r < 2 * ROUNDS; r++) {
        char c = 0;
        while (spin_for_reader && atomic_load(&main_spins) != r + 1)
            ;
        atomic_store(&reading, r + 1);
        long got = read_one(r, read_fds[0], &c);
        printf("read %d: %ld '%c'\n", r, got, c);
    }
    return NULL;
}

/* Makes 2 * ROUNDS reads of a pipe through `read` on a thread; once each most likely blocks,
 * interrupts it with SIGUSR1 (whose SA_RESTART handler the caller installed), waits for the
 * handler, then writes byte 'a' + r. Returns 0, or 1 if the pipe failed. */
static int restart_reads(long (*read)(int r, int fd, char *c)) {
    read_one = read;
    if (pipe(read_fds))
        return 1;
    pthread_t t;
    pthread_create(&t, NULL, reader, NULL);
    for (int r = 0; r < 2 * ROUNDS; r++) {
        atomic_store(&main_spins, r + 1);
        while (atomic_load(&reading) != r + 1)
            if (!spin_for_reader)
                pause_ms(1);
        pause_ms(20); /* most likely blocked in read by now (either way the output is the same) */
        int before = atomic_load(&handled);
        pthread_kill(t, SIGUSR1);
        while (atomic_load(&handled) == before)
            pause_ms(1);
        char byte = 'a' + r;
        if (write(read_fds[1], &byte, 1) != 1)
            return 1;
    }
    pthread_join(t, NULL);
    return 0;
}

/* The spin case's threads: each runs spin_round(ppid) (which returns how many results were
 * wrong) until told to stop. */
static long (*spin_round)(long ppid);
static atomic_int stop_spinning;
static long spin_bad[SPINNERS];

static void *spinner(void *arg) {
    long i = (long)arg, ppid = getppid();
    while (!atomic_load(&stop_spinning))
        spin_bad[i] += spin_round(ppid);
    return NULL;
}

/* Starts SPINNERS threads spinning on `round`, sends them SIGNALS SIGUSR1 signals in turn,
 * each once the one before was handled, then stops and joins them; returns how many of
 * their results were wrong. */
static long spin_with_signals(long (*round)(long ppid)) {
    spin_round = round;
    pthread_t t[SPINNERS];
    for (long i = 0; i < SPINNERS; i++)
        pthread_create(&t[i], NULL, spinner, (void *)i);
    for (int s = 0; s < SIGNALS; s++) {
        int before = atomic_load(&handled);
        pthread_kill(t[s % SPINNERS], SIGUSR1);
        while (atomic_load(&handled) == before)
            sched_yield();
    }
    atomic_store(&stop_spinning, 1);
    long bad = 0;
    for (int i = 0; i < SPINNERS; i++) {
        pthread_join(t[i], NULL);
        bad += spin_bad[i];
    }
    return bad;
}

/* Where a resumed call returns: keeps rax, then leaves through resume_landing. */
__asm__(".text\n"
        ".globl resume_trampoline\n.type resume_trampoline,@function\nresume_trampoline:\n"
        "  mov %rax, resumed_rax(%rip)\n"
        "  and $-16, %rsp\n"
        "  call resume_landing\n"
        "  ud2\n"
        ".size resume_trampoline, .-resume_trampoline\n");
void resume_trampoline(void);
long resumed_rax;
static sigjmp_buf resume_env;
static unsigned long resume_stack[2048] __attribute__((aligned(16)));

void resume_landing(void) {
    siglongjmp(resume_env, 1);
}

/* Where send_to_syscall resumes, the r10 the old code had there, and its rdx (0: as the
 * interrupted code had it). */
static long resume_at, resume_r10, resume_rdx;

/* Resumes at resume_at with rax = getpid's number, r10 and rcx = resume_r10, rsi = 1, rdx =
 * resume_rdx if set, and a
 * return address to resume_trampoline, as a debugger or a user-level scheduler may. */
static void send_to_syscall(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)si;
    ucontext_t *uc = ctx;
    unsigned long *top = &resume_stack[2048 - 2];
    *top = (unsigned long)resume_trampoline;
    uc->uc_mcontext.gregs[REG_RSP] = (long)top;
    uc->uc_mcontext.gregs[REG_RAX] = SYS_getpid;
    uc->uc_mcontext.gregs[REG_R10] = resume_r10;
    uc->uc_mcontext.gregs[REG_RCX] = resume_r10;
    uc->uc_mcontext.gregs[REG_RSI] = 1;
    if (resume_rdx)
        uc->uc_mcontext.gregs[REG_RDX] = resume_rdx;
    uc->uc_mcontext.gregs[REG_RIP] = resume_at;
}

/* Installs send_to_syscall for SIGUSR2. */
static void install_resume(void) {
    set_info_handler(SIGUSR2, send_to_syscall, 0);
}

/* Rounds of a direct call through `call` (which rewrites its site the first time), then a
 * handler's resumption at `at` with r10 = `r10`; returns how many results were wrong. */
static long resume_rounds(long (*call)(void), long at, long r10) {
    long pid = getpid();
    volatile long wrong = 0;
    resume_at = at;
    resume_r10 = r10;
    for (int r = 0; r < ROUNDS; r++) {
        wrong += call() != pid;
        resumed_rax = 0;
        if (!sigsetjmp(resume_env, 1))
            raise(SIGUSR2);
        wrong += resumed_rax != pid;
    }
    return wrong;
}

#endif
