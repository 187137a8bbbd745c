// How a waited-for child ended, as one short text ("exited N", "killed by N"), the same
// natively and under hrt.
#ifndef HOSTILE_ENDED_H
#define HOSTILE_ENDED_H
#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>

/* Waits for `p` and describes how it ended. */
static const char *ended(pid_t p) {
    static char buf[64];
    int st = 0;
    pid_t w = waitpid(p, &st, 0);
    if (w != p)
        snprintf(buf, sizeof buf, "waitpid %d errno %d", (int)w, errno);
    else if (WIFEXITED(st))
        snprintf(buf, sizeof buf, "exited %d", WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        snprintf(buf, sizeof buf, "killed by %d", WTERMSIG(st));
    else
        snprintf(buf, sizeof buf, "status %#x", st);
    return buf;
}

#endif
