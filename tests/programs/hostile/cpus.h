// The highest-numbered CPU this thread may run on (its affinity mask), the same natively and
// under hrt.
#ifndef HOSTILE_CPUS_H
#define HOSTILE_CPUS_H
#include <sched.h>

static int last_allowed_cpu(void) {
    cpu_set_t allowed;
    sched_getaffinity(0, sizeof allowed, &allowed);
    int last = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed))
            last = c;
    return last;
}

#endif
