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

/// For each max-active-levels in `levels`: set it, then omp_set_nested(`on`), and print both
/// ICVs as they are then.
static void set_nested_after(const int *levels, unsigned n, int on) {
    for (unsigned i = 0; i < n; i++) {
        omp_set_max_active_levels(levels[i]);
        omp_set_nested(on);
        printf("levels %d, set_nested(%d): nested %d, max active levels %d\n", levels[i], on, omp_get_nested(),
               omp_get_max_active_levels());
    }
}

int main(void) {
    omp_set_dynamic(0);
    printf("start: nested %d, max active levels %d\n", omp_get_nested(), omp_get_max_active_levels());
    const int from[] = {1, 0, 3}, off[] = {0, 3, 1};
    set_nested_after(from, 3, 1);
    inner_team("nested on:");
    set_nested_after(off, 3, 0);
    inner_team("nested off:");
    return 0;
}
