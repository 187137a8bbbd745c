// Installs a plain signal handler with the given sa_flags and an empty mask, and the other
// set-ups the signal test programs share.
#ifndef HOSTILE_HANDLER_H
#define HOSTILE_HANDLER_H
#include <signal.h>
#include <string.h>

static inline void set_handler(int sig, void (*handler)(int), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

// An SA_SIGINFO handler with the given further sa_flags and an empty mask.
static inline void set_info_handler(int sig, void (*handler)(int, siginfo_t *, void *), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

// A timer's sigevent: signal `sig` with sival_int `value` to the process.
static inline void signal_event(struct sigevent *ev, int sig, int value) {
    memset(ev, 0, sizeof *ev);
    ev->sigev_notify = SIGEV_SIGNAL;
    ev->sigev_signo = sig;
    ev->sigev_value.sival_int = value;
}

// Waits in sigsuspend, every signal unblocked, until `*flag` is set.
static inline void suspend_until(volatile int *flag) {
    sigset_t none;
    sigemptyset(&none);
    while (*flag == 0)
        sigsuspend(&none);
}
#endif
