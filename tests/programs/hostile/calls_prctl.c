/* prctl: the name, the dumpable flag, seccomp and security bits, ambient capabilities, keep
 * capabilities, timer slack, THP-disable, the machine-check kill policy and PR_GET_AUXV as
 * Linux answers them; then an option hrt does not
 * implement, twice, whose result is not printed (Linux grants it; hrt says so once). */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef PR_GET_AUXV
#define PR_GET_AUXV 0x41555856
#endif

static void show(const char *what, int r) {
    if (r < 0)
        printf("%-28s -1 errno %d\n", what, errno);
    else
        printf("%-28s %d\n", what, r);
}

int main(void) {
    char name[16] = {0};
    show("PR_SET_NAME", prctl(PR_SET_NAME, "renamed-thread-x", 0, 0, 0));
    show("PR_GET_NAME", prctl(PR_GET_NAME, name, 0, 0, 0));
    printf("name %s\n", name);
    show("PR_GET_DUMPABLE", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
    // The machine-check kill policy (it was EINVAL with a line).
    show("PR_MCE_KILL_GET", prctl(PR_MCE_KILL_GET, 0, 0, 0, 0));
    show("PR_MCE_KILL set early", prctl(PR_MCE_KILL, PR_MCE_KILL_SET, PR_MCE_KILL_EARLY, 0, 0));
    show("PR_MCE_KILL_GET", prctl(PR_MCE_KILL_GET, 0, 0, 0, 0));
    show("PR_MCE_KILL set 3", prctl(PR_MCE_KILL, PR_MCE_KILL_SET, 3, 0, 0));
    show("PR_MCE_KILL clear", prctl(PR_MCE_KILL, PR_MCE_KILL_CLEAR, 0, 0, 0));
    show("PR_MCE_KILL_GET", prctl(PR_MCE_KILL_GET, 0, 0, 0, 0));
    show("PR_MCE_KILL_GET 1", prctl(PR_MCE_KILL_GET, 1, 0, 0, 0));
    show("PR_SET_DUMPABLE 0", prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
    show("PR_GET_DUMPABLE", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
    show("PR_SET_DUMPABLE 2", prctl(PR_SET_DUMPABLE, 2, 0, 0, 0));
    show("PR_SET_DUMPABLE 1", prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
    show("PR_GET_DUMPABLE", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
    show("unknown option 1000", prctl(1000, 0, 0, 0, 0));
    show("PR_GET_SECCOMP", prctl(PR_GET_SECCOMP, 0, 0, 0, 0));
    show("PR_GET_SECUREBITS", prctl(PR_GET_SECUREBITS, 0, 0, 0, 0));
    show("PR_CAP_AMBIENT IS_SET 0", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, 0, 0, 0));
    show("PR_CAP_AMBIENT CLEAR_ALL", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0));
    show("PR_CAP_AMBIENT 9", prctl(PR_CAP_AMBIENT, 9, 0, 0, 0));
    show("PR_GET_KEEPCAPS", prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0));
    show("PR_SET_KEEPCAPS 1", prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
    show("PR_GET_KEEPCAPS", prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0));
    show("PR_SET_KEEPCAPS 2", prctl(PR_SET_KEEPCAPS, 2, 0, 0, 0));
    show("PR_GET_TIMERSLACK", prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
    show("PR_SET_TIMERSLACK 1000", prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0));
    show("PR_GET_TIMERSLACK", prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
    show("PR_SET_TIMERSLACK 0", prctl(PR_SET_TIMERSLACK, 0, 0, 0, 0));
    show("PR_GET_TIMERSLACK", prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0));
    show("PR_GET_THP_DISABLE", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
    show("PR_GET_THP_DISABLE with arguments", prctl(PR_GET_THP_DISABLE, 1, 1, 0, 0));
    show("PR_SET_THP_DISABLE 1", prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0));
    show("PR_GET_THP_DISABLE", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
    show("PR_TASK_PERF_EVENTS_DISABLE", prctl(PR_TASK_PERF_EVENTS_DISABLE, 0, 0, 0, 0));
    show("PR_TASK_PERF_EVENTS_ENABLE", prctl(PR_TASK_PERF_EVENTS_ENABLE, 0, 0, 0, 0));
    show("PR_GET_TIMING", prctl(PR_GET_TIMING, 0, 0, 0, 0));
    show("PR_SET_TIMING statistical", prctl(PR_SET_TIMING, PR_TIMING_STATISTICAL, 0, 0, 0));
    show("PR_SET_TIMING timestamp", prctl(PR_SET_TIMING, PR_TIMING_TIMESTAMP, 0, 0, 0));
    /* PR_GET_AUXV: the vector execve built (getauxval's), zero-padded, and its size. */
    unsigned long aux[64];
    memset(aux, 0xab, sizeof aux);
    show("PR_GET_AUXV size", prctl(PR_GET_AUXV, (unsigned long)aux, 0, 0, 0));
    show("PR_GET_AUXV 16 bytes", prctl(PR_GET_AUXV, (unsigned long)aux, 16, 0, 0));
    printf("first pair as getauxval: %s, third word untouched: %s\n",
           aux[1] == getauxval(aux[0]) ? "yes" : "no", aux[2] == 0xababababababababUL ? "yes" : "no");
    int got = prctl(PR_GET_AUXV, (unsigned long)aux, sizeof aux, 0, 0);
    show("PR_GET_AUXV all", got);
    int pairs = 0, same = 0, padded = 1;
    for (int i = 0; i < got / 8; i += 2) {
        if (aux[i] == AT_NULL) {
            for (int j = i; j < got / 8; j++)
                padded &= aux[j] == 0;
            break;
        }
        /* glibc's getauxval answers AT_HWCAP and AT_HWCAP2 with its own view of them. */
        if (aux[i] == AT_HWCAP || aux[i] == AT_HWCAP2)
            continue;
        pairs++;
        same += aux[i + 1] == getauxval(aux[i]);
    }
    printf("auxv pairs as getauxval: %s, zero after AT_NULL: %s, has AT_RANDOM and AT_EXECFN: %s\n",
           pairs > 10 && same == pairs ? "yes" : "no", padded ? "yes" : "no",
           getauxval(AT_RANDOM) && getauxval(AT_EXECFN) ? "yes" : "no");
    show("PR_GET_AUXV arg4", prctl(PR_GET_AUXV, (unsigned long)aux, 16, 1, 0));
    show("PR_GET_AUXV bad address", prctl(PR_GET_AUXV, 8, 16, 0, 0));
    show("PR_GET_AUXV bad address, 0", prctl(PR_GET_AUXV, 8, 0, 0, 0));
    /* PR_GET_TID_ADDRESS: set_tid_address's (glibc set the thread's own tid field). */
    int *first = (int *)1, *tid_address = (int *)1;
    show("PR_GET_TID_ADDRESS", prctl(PR_GET_TID_ADDRESS, (unsigned long)&first, 0, 0, 0));
    int mine = 1;
    long my_tid = syscall(SYS_set_tid_address, &mine);
    show("set_tid_address is the tid", my_tid == gettid());
    prctl(PR_GET_TID_ADDRESS, (unsigned long)&tid_address, 0, 0, 0);
    printf("PR_GET_TID_ADDRESS after set_tid_address: %s; before: %s\n",
           tid_address == &mine ? "the address set" : "another",
           first != 0 && first != (int *)1 ? "an address" : "none");
    syscall(SYS_set_tid_address, first);
    show("PR_GET_TID_ADDRESS bad address", prctl(PR_GET_TID_ADDRESS, 8, 0, 0, 0));
    /* PR_SET_MM's map size, its argument checks, and the other Linux 6.x questions. */
    unsigned int map_size = 0;
    show("PR_SET_MM_MAP_SIZE", prctl(PR_SET_MM, PR_SET_MM_MAP_SIZE, (unsigned long)&map_size, 0, 0));
    printf("struct prctl_mm_map: %u bytes\n", map_size);
    show("PR_SET_MM_MAP_SIZE NULL", prctl(PR_SET_MM, PR_SET_MM_MAP_SIZE, 0, 0, 0));
    show("PR_SET_MM fifth argument", prctl(PR_SET_MM, PR_SET_MM_START_BRK, 0, 0, 1));
    show("PR_CAP_AMBIENT IS_SET fourth argument", prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, 0, 1, 0));
    show("PR_GET_MDWE", prctl(66, 0, 0, 0, 0));
    show("PR_GET_MEMORY_MERGE", prctl(68, 0, 0, 0, 0));
    /* An option hrt does not implement, twice (its result is not shown: Linux's depends on
     * the host's core scheduling). */
    unsigned long cookie;
    prctl(PR_SCHED_CORE, 0, 0, 0, (unsigned long)&cookie);
    prctl(PR_SCHED_CORE, 0, 0, 0, (unsigned long)&cookie);
    return 0;
}
