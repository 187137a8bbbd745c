/* Places and thread affinity (OMP_PLACES, OMP_PROC_BIND) as the OpenMP specification defines
 * them: the place list, each thread's place and place partition for teams smaller and larger
 * than the partition, and nested spread/close. Run under different environments by the test
 * and compared with libgomp natively on as many CPUs as the host has; lines are sorted by
 * thread so they do not depend on timing. */
#define _GNU_SOURCE
#include <omp.h>
#include <sched.h>
#include <stdio.h>

static void team(const char *label, int n, int first) {
    char lines[16][160];
    int count = 0;
#pragma omp parallel num_threads(n)
    {
        int me = omp_get_thread_num(), parts[64], np = omp_get_partition_num_places();
        char buf[160];
        int place = omp_get_place_num();
        /* In the program's first team, a bound thread runs on a processor of its place (the
         * runtime's binding took effect, not only its bookkeeping). Not in later teams: libgomp
         * leaves a thread it reuses for another place where it was (natively, "four t1"
         * reports place 0 and runs on CPU 1 under OMP_PROC_BIND=true on two CPUs). */
        const char *on = "";
        if (place >= 0 && first) {
            int ids[256], k = omp_get_place_num_procs(place), cpu = sched_getcpu(), found = 0;
            if (k <= 256) {
                omp_get_place_proc_ids(place, ids);
                for (int i = 0; i < k; i++)
                    found |= ids[i] == cpu;
            }
            on = found ? " (on it)" : " (elsewhere)";
        }
        int len = snprintf(buf, sizeof buf, "%s t%d place %d%s partition %d:", label, me, place, on, np);
        if (np > 0 && np <= 64) {
            omp_get_partition_place_nums(parts);
            for (int i = 0; i < np && len < 150; i++)
                len += snprintf(buf + len, sizeof buf - len, " %d", parts[i]);
        }
#pragma omp critical
        if (me < 16) {
            snprintf(lines[me], sizeof lines[me], "%s", buf);
            count++;
        }
    }
    for (int i = 0; i < count && i < n; i++)
        puts(lines[i]);
}

int main(void) {
    int n = omp_get_num_places();
    printf("places %d proc_bind %d\n", n, (int)omp_get_proc_bind());
    for (int p = 0; p < n; p++) {
        int ids[256], k = omp_get_place_num_procs(p);
        printf("place %d:", p);
        if (k <= 256) {
            omp_get_place_proc_ids(p, ids);
            for (int i = 0; i < k; i++)
                printf(" %d", ids[i]);
        }
        printf("\n");
    }
    printf("initial place %d partition %d\n", omp_get_place_num(), omp_get_partition_num_places());
    team("two", 2, 1);
    team("four", 4, 0);
    omp_set_max_active_levels(2);
#pragma omp parallel num_threads(2) proc_bind(spread)
    {
        int outer = omp_get_thread_num(), outer_place = omp_get_place_num();
#pragma omp parallel num_threads(2) proc_bind(close)
        {
#pragma omp critical
            printf("nested outer %d (place %d) inner %d place %d partition %d\n", outer, outer_place,
                   omp_get_thread_num(), omp_get_place_num(), omp_get_partition_num_places());
        }
    }
    return 0;
}
