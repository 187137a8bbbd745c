/* A program built without -fopenmp whose library (omp_indirect_lib.c) uses OpenMP, linked to
 * it or opening it with dlopen (-DLIB_PATH="..."): under `hrt run --omp kernel` the library's
 * libgomp runs on the kernel's runtime as a program's own would, with the same results as
 * natively. Before, the program ran on its own libgomp, and `-v` said there was nothing to
 * replace. */
#include <stdio.h>
#ifdef LIB_PATH
#include <dlfcn.h>
#else
long long team_sum(int n, int *team, int *covered);
#endif

int main(void) {
    long long (*sum_of)(int, int *, int *);
#ifdef LIB_PATH
    void *lib = dlopen(LIB_PATH, RTLD_NOW);
    if (!lib) {
        printf("dlopen: %s\n", dlerror());
        return 1;
    }
    sum_of = (long long (*)(int, int *, int *))dlsym(lib, "team_sum");
    if (!sum_of) {
        printf("dlsym: %s\n", dlerror());
        return 1;
    }
#else
    sum_of = team_sum;
#endif
    int team = 0, covered = 0;
    long long s = sum_of(1000, &team, &covered);
    printf("sum %lld, every iteration once: %s, a team of at least one: %s\n", s, covered == 1000 ? "yes" : "no",
           team >= 1 ? "yes" : "no");
    return 0;
}
