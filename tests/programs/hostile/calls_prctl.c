/* prctl: the name and the dumpable flag as Linux answers them; then an option hrt does not
 * implement, twice, whose result is not printed (Linux grants it; hrt says so once). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

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
    show("PR_SET_DUMPABLE 0", prctl(PR_SET_DUMPABLE, 0, 0, 0, 0));
    show("PR_GET_DUMPABLE", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
    show("PR_SET_DUMPABLE 2", prctl(PR_SET_DUMPABLE, 2, 0, 0, 0));
    show("PR_SET_DUMPABLE 1", prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
    show("PR_GET_DUMPABLE", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
    show("unknown option 1000", prctl(1000, 0, 0, 0, 0));
    /* An option hrt does not implement, twice (its result is not shown: Linux's is 0). */
    prctl(PR_SET_TIMERSLACK, 50000, 0, 0, 0);
    prctl(PR_SET_TIMERSLACK, 50000, 0, 0, 0);
    return 0;
}
