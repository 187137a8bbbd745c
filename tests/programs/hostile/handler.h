// Installs a plain signal handler with the given sa_flags and an empty mask (the set-up the
// signal test programs share).
#ifndef HOSTILE_HANDLER_H
#define HOSTILE_HANDLER_H
#include <signal.h>
#include <string.h>

static void set_handler(int sig, void (*handler)(int), int flags) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = flags;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}
#endif
