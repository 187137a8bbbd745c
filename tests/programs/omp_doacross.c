/* A doacross loop (ordered(1) with depend(sink)/depend(source)): the one construct here that
 * the kernel's own OpenMP runtime does not provide, so `hrt run --omp kernel` must refuse the
 * program and `--omp auto` must run it on its own libgomp, with the same output as natively. */
#include <omp.h>
#include <stdio.h>

enum { N = 1000 };

int main(void) {
    static long a[N];
    a[0] = 1;
#pragma omp parallel for ordered(1)
    for (int i = 1; i < N; i++) {
#pragma omp ordered depend(sink : i - 1)
        a[i] = a[i - 1] * 3 % 1000003 + i;
#pragma omp ordered depend(source)
    }
    long expect = 1;
    for (int i = 1; i < N; i++)
        expect = expect * 3 % 1000003 + i;
    printf("doacross chain %s: %ld\n", a[N - 1] == expect ? "ok" : "FAILED", a[N - 1]);
    return a[N - 1] != expect;
}
