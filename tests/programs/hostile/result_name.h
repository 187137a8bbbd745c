// A call's result as the IPC test programs print it: the value, or the errno's name
// (EAGAIN, EINTR, ...), the same natively and under hrt. The text lives in one static buffer:
// one `result` per printf. And a short pause between steps. (Needs _GNU_SOURCE, defined by
// the including program before its first include, for strerrorname_np.)
#ifndef HOSTILE_RESULT_NAME_H
#define HOSTILE_RESULT_NAME_H
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static inline const char *result(long r) {
    static char b[32];
    if (r >= 0) {
        snprintf(b, sizeof b, "%ld", r);
        return b;
    }
    return strerrorname_np(errno);
}

static inline void pause_ms(int ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, 0);
}
#endif
