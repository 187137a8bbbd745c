// Reading memory that may fault, without dying of it: `peek` says what reading a byte gives,
// its value or the name of the signal it raised. `peek_catch` sends `sig` (SIGSEGV, SIGBUS) to
// the handler that brings `peek` back.
#ifndef HOSTILE_PEEK_H
#define HOSTILE_PEEK_H
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static sigjmp_buf peek_back;
static void peek_on_fault(int sig) { siglongjmp(peek_back, sig); }

static void peek_catch(int sig) {
    struct sigaction sa = {.sa_handler = peek_on_fault, .sa_flags = SA_NODEFER};
    sigaction(sig, &sa, 0);
}

// What reading p gives: the byte, or the signal's name.
static const char *peek(volatile char *p) {
    static char out[8][16];
    static int n;
    char *o = out[n++ % 8];
    int sig = sigsetjmp(peek_back, 1);
    if (sig == 0)
        snprintf(o, 16, "%d", *p);
    else
        snprintf(o, 16, "%s", sigabbrev_np(sig));
    return o;
}
#endif
