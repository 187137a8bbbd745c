// Whether a process or thread sleeps, from its /proc stat file: a test that must signal a
// waiter only once it waits looks until it does (a loaded host delays any step).
#ifndef HOSTILE_PROC_STATE_H
#define HOSTILE_PROC_STATE_H
#include <stdio.h>
#include <string.h>

// `stat` names a /proc stat file (/proc/PID/stat, /proc/self/task/TID/stat): 1 if its state
// (the field after the name in parentheses) is S, interruptible sleep.
static inline int sleeps(const char *stat) {
    char line[512];
    FILE *f = fopen(stat, "r");
    if (!f)
        return 0;
    int s = 0;
    if (fgets(line, sizeof line, f)) {
        char *p = strrchr(line, ')');
        s = p && p[1] == ' ' && p[2] == 'S';
    }
    fclose(f);
    return s;
}
#endif
