/* sysinfo's load averages agree with /proc/loadavg, read right after (glibc's getloadavg, and
 * so libgomp's OMP_DYNAMIC team sizes, use sysinfo): within 0.1, allowing for the kernel's
 * 5 s update between the two reads. Usage: sysinfo_loads */
#include <stdio.h>
#include <sys/sysinfo.h>

int main(void) {
    int agree = 0;
    for (int tries = 0; tries < 5 && !agree; tries++) {
        struct sysinfo si;
        if (sysinfo(&si) != 0)
            return 1;
        double file[3];
        FILE *f = fopen("/proc/loadavg", "r");
        if (!f || fscanf(f, "%lf %lf %lf", &file[0], &file[1], &file[2]) != 3)
            return 1;
        fclose(f);
        agree = 1;
        for (int i = 0; i < 3; i++) {
            double mine = si.loads[i] / 65536.0, diff = mine - file[i];
            agree &= diff < 0.1 && diff > -0.1;
        }
    }
    printf("sysinfo's loads agree with /proc/loadavg: %d\n", agree);
    return 0;
}
