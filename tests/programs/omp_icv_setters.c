// The nesting setters as libgomp 12 answers them: omp_set_nested(1) sets max-active-levels to
// the most supported whatever it was (0 and 3 included), omp_set_nested(0) lowers a larger one
// to 1 and leaves 0; a nested region then has a team at level 2 or none. Under
// `hrt run --omp kernel` the program must print what it prints natively.
#include <omp.h>
#include <stdio.h>

static void inner_team(const char *what) {
    int size = 0, level = 0;
#pragma omp parallel num_threads(2)
#pragma omp parallel num_threads(2)
#pragma omp single
    {
        size = omp_get_num_threads();
        level = omp_get_active_level();
    }
    printf("%-28s inner team %d at active level %d\n", what, size, level);
}

int main(void) {
    omp_set_dynamic(0);
    printf("start: nested %d, max active levels %d\n", omp_get_nested(), omp_get_max_active_levels());
    int from[] = {1, 0, 3};
    for (unsigned i = 0; i < sizeof from / sizeof from[0]; i++) {
        omp_set_max_active_levels(from[i]);
        omp_set_nested(1);
        printf("levels %d, set_nested(1): nested %d, max active levels %d\n", from[i], omp_get_nested(),
               omp_get_max_active_levels());
    }
    inner_team("nested on:");
    int off[] = {0, 3, 1};
    for (unsigned i = 0; i < sizeof off / sizeof off[0]; i++) {
        omp_set_max_active_levels(off[i]);
        omp_set_nested(0);
        printf("levels %d, set_nested(0): nested %d, max active levels %d\n", off[i], omp_get_nested(),
               omp_get_max_active_levels());
    }
    inner_team("nested off:");
    return 0;
}
