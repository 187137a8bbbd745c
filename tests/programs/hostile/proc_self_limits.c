// /proc/self/limits: the program's resource limits in Linux's layout, before and after it
// lowers some (core size, stack, open files, locked memory), read by the program itself; they
// were EACCES under hrt, and are the program's kernel's limits, not hrt's.
#include <stdio.h>
#include <sys/resource.h>

static void show(const char *when) {
    printf("-- %s\n", when);
    FILE *f = fopen("/proc/self/limits", "r");
    if (!f) {
        perror("/proc/self/limits");
        return;
    }
    char line[256];
    while (fgets(line, sizeof line, f)) fputs(line, stdout);
    fclose(f);
}

int main(void) {
    show("as started");
    struct rlimit core = {4096, 8192}, nofile = {100, 200}, memlock = {65536, 65536};
    struct rlimit stack;
    getrlimit(RLIMIT_STACK, &stack);
    stack.rlim_cur = 4 << 20;
    int r = setrlimit(RLIMIT_CORE, &core) | setrlimit(RLIMIT_NOFILE, &nofile) | setrlimit(RLIMIT_STACK, &stack);
    r |= setrlimit(RLIMIT_MEMLOCK, &memlock);
    printf("setrlimit: %d\n", r);
    show("after lowering");
    return 0;
}
