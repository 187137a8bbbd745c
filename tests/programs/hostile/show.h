// The aligned one-line result the calls_* programs print per case, the same natively and
// under hrt: "what   value" on success, "what   -1 <strerror>" on failure. A program sets
// SHOW_WIDTH (the column its names take) before including this.
#ifndef HOSTILE_SHOW_H
#define HOSTILE_SHOW_H
#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifndef SHOW_WIDTH
#define SHOW_WIDTH 36
#endif

static inline void show(const char *what, long r) {
    if (r < 0)
        printf("%-*s -1 %s\n", SHOW_WIDTH, what, strerror(errno));
    else
        printf("%-*s %ld\n", SHOW_WIDTH, what, r);
}
#endif
