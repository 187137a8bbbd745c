// The affinity-format routines (omp_set/get_affinity_format, omp_capture_affinity,
// omp_display_affinity; OMP_AFFINITY_FORMAT) and omp_display_env (OMP_DISPLAY_ENV), compared
// with libgomp's output. Only fields that do not change between runs are used (not the thread
// handle %i, the process id %P or the processor list %A); lines from several threads are
// printed in thread order (`ordered`).
#include <omp.h>
#include <stdio.h>
#include <string.h>

static void show_capture(const char *fmt) {
    char buf[128];
    size_t n = omp_capture_affinity(buf, sizeof buf, fmt);
    printf("capture '%s' -> %zu '%s'\n", fmt ? fmt : "(null)", n, buf);
}

int main(void) {
    char fmt[64];
    size_t n = omp_get_affinity_format(fmt, sizeof fmt);
    printf("format %zu '%s'\n", n, fmt);
    n = omp_get_affinity_format(fmt, 6);
    printf("truncated %zu '%s'\n", n, fmt);
    printf("length only %zu\n", omp_get_affinity_format(NULL, 0));

    show_capture("T%n/%N L%L a%a t%t of %T %%");
    show_capture("[%5n][%.5n][%0.5n][%.2L][%0.3a][%1N]");
    show_capture("%{thread_num}|%{num_threads}|%.4{nesting_level}|%{team_num}|%{num_teams}|%{ancestor_tnum}");
    show_capture("host %H");
    char small[5];
    n = omp_capture_affinity(small, sizeof small, "%n abcdefgh");
    printf("small buffer %zu '%s'\n", n, small);

    omp_set_affinity_format("thread %n of %N at level %L (ancestor %a)");
    n = omp_get_affinity_format(fmt, sizeof fmt);
    printf("set format %zu '%s'\n", n, fmt);
    show_capture(NULL);
    show_capture("");
    omp_display_affinity(NULL);
    omp_display_affinity("explicit %.3n|%N");
    fflush(stderr);
#pragma omp parallel num_threads(3)
    {
#pragma omp for ordered schedule(static, 1)
        for (int i = 0; i < omp_get_num_threads(); i++) {
#pragma omp ordered
            {
                char b[128];
                omp_capture_affinity(b, sizeof b, NULL);
                printf("in region: %s\n", b);
                fflush(stdout);
                omp_display_affinity("region %n/%N level %L ancestor %a");
            }
        }
#pragma omp parallel num_threads(2)
        {
            char b[128];
            omp_capture_affinity(b, sizeof b, "%L %a %N");
#pragma omp critical
            if (strcmp(b, "2 0 2") != 0 && strcmp(b, "2 1 2") != 0 && strcmp(b, "2 2 2") != 0 &&
                strcmp(b, "1 -1 1") != 0 && strcmp(b, "2 0 1") != 0 && strcmp(b, "2 1 1") != 0 &&
                strcmp(b, "2 2 1") != 0)
                printf("nested: unexpected '%s'\n", b);
        }
    }
    omp_display_env(0);
    omp_display_env(1);
    printf("done\n");
    return 0;
}
