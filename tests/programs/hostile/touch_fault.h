// Touching memory that may raise SIGBUS or SIGSEGV, without dying of it: a handler notes the
// signal, si_code and si_addr and siglongjmps back to the touch. (probe.h is the SIGSEGV-only
// variant that checks the address itself.)
#ifndef HOSTILE_TOUCH_FAULT_H
#define HOSTILE_TOUCH_FAULT_H
#include <setjmp.h>
#include <signal.h>
#include <string.h>

// What a touch did: the signal (0: none), its si_code and si_addr, or the byte read.
struct touched {
    int sig, code;
    void *addr;
    int value;
};

static sigjmp_buf touch_back;
static volatile int touch_sig, touch_code;
static void *volatile touch_addr;

static void touch_on_fault(int sig, siginfo_t *si, void *uc) {
    (void)uc;
    touch_sig = sig;
    touch_code = si->si_code;
    touch_addr = si->si_addr;
    siglongjmp(touch_back, 1);
}

// Sends SIGBUS and SIGSEGV to touch_on_fault.
static void catch_touch_faults(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = touch_on_fault;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGSEGV, &sa, NULL);
}

// Reads `p`, or writes `byte` there if `write`. Not inlined: its sigsetjmp would make the
// caller's variables unreliable after the jump back.
static __attribute__((noinline)) struct touched touch_at(volatile char *p, int write, char byte) {
    touch_sig = 0;
    int value = -1;
    if (sigsetjmp(touch_back, 1) == 0) {
        if (write)
            *p = byte;
        else
            value = *p;
    }
    struct touched t = {touch_sig, touch_code, touch_addr, value};
    return t;
}

#endif
