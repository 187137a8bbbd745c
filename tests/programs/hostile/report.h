// The one-line result a hostile program prints per case, the same natively and under hrt:
// "what: value" on success, "what: -1 errno N" on failure.
#ifndef HOSTILE_REPORT_H
#define HOSTILE_REPORT_H
#include <errno.h>
#include <stdio.h>

static void report(const char *what, long r) {
    if (r < 0)
        printf("%s: -1 errno %d\n", what, errno);
    else
        printf("%s: %ld\n", what, r);
}
#endif
