// A fresh scratch directory under /tmp for the path test programs, and a look at whether a
// name is there (without following a link).
#ifndef HOSTILE_SCRATCH_H
#define HOSTILE_SCRATCH_H
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

// Makes a directory from `template` (ending in XXXXXX, rewritten in place) and enters it:
// 0, or -1 if either fails.
static inline int enter_scratch(char *template) {
    return mkdtemp(template) && chdir(template) == 0 ? 0 : -1;
}

static inline const char *exists(const char *p) {
    struct stat st;
    return lstat(p, &st) == 0 ? "exists" : "missing";
}
#endif
