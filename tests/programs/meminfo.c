/* The memory a program is told it has: /proc/meminfo's MemTotal and MemFree against sysinfo(2)
 * (glibc's sysconf(_SC_PHYS_PAGES) and _SC_AVPHYS_PAGES read the same numbers). On Linux the two
 * agree; under `hrt run` both must describe the program's memory in the VM, not the host's
 * (monitor/tests/run_programs.rs compares this program's output with its native run).
 * `meminfo KB`: also says whether both totals are at most KB (the host's MemTotal: under
 * `hrt run` the VM's memory may be a larger reservation, but the program is told the host's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

/* The value (kB) of `name` in /proc/meminfo, or -1. */
static long field(const char *name) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long v = -1;
    size_t len = strlen(name);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, name, len) && line[len] == ':')
            v = atol(line + len + 1);
    if (f)
        fclose(f);
    return v;
}

int main(int argc, char **argv) {
    struct sysinfo si;
    if (sysinfo(&si) != 0)
        return perror("sysinfo"), 1;
    long total_kb = (long)(si.totalram * (unsigned long)si.mem_unit / 1024);
    long mem_total = field("MemTotal"), mem_free = field("MemFree"), avail = field("MemAvailable");
    printf("MemTotal is sysinfo's total: %d\n", mem_total == total_kb);
    printf("MemFree at most MemTotal: %d\n", mem_free >= 0 && mem_free <= mem_total);
    printf("MemAvailable at most MemTotal: %d\n", avail >= 0 && avail <= mem_total);
    /* Loose, as other work changes free memory between the two reads. */
    long free_kb = (long)(si.freeram * (unsigned long)si.mem_unit / 1024);
    printf("MemFree within 10%% of the total of sysinfo's free: %d\n", labs(mem_free - free_kb) <= total_kb / 10);
    if (argc > 1) {
        long most = atol(argv[1]);
        printf("both totals at most the host's: %d\n", total_kb <= most && mem_total <= most);
    }
    return 0;
}
