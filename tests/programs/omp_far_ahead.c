// Threads that run many `nowait` work-sharing constructs ahead of another: thread 0 waits
// until every other thread has finished K constructs (dynamic, guided, runtime, ordered loops
// and sections), then runs them itself. No thread may wait for thread 0 to catch up (libgomp
// gives each construct a work share of its own); the kernel's runtime once kept a ring of
// eight and hung at the ninth. Several regions in a row reuse what the first one made.
#include <omp.h>
#include <stdio.h>

#define K 40
#define N 64

/* A `nowait` loop with schedule(...) (the arguments after the first two) that adds `mult * i`
 * for each i to `sum`. */
#define PRAGMA(text) _Pragma(#text)
#define SUM_LOOP(sum, mult, ...)                                                                 \
    PRAGMA(omp for schedule(__VA_ARGS__) nowait)                                                 \
    for (int i = 0; i < N; i++) {                                                                \
        PRAGMA(omp atomic)                                                                       \
        (sum) += (mult) * i;                                                                     \
    }

int main(void) {
    long total = 0;
    for (int region = 0; region < 3; region++) {
        long sums[K] = {0};
        int done = 0;
#pragma omp parallel shared(done)
        {
            int me = omp_get_thread_num(), nt = omp_get_num_threads();
            if (me == 0 && nt > 1) {
                int d = 0;
                while (d < nt - 1) {
#pragma omp atomic read
                    d = done;
                }
            }
            for (int k = 0; k < K; k++) {
                switch (k % 5) {
                case 0:
                    SUM_LOOP(sums[k], 1, dynamic, 1);
                    break;
                case 1:
                    SUM_LOOP(sums[k], 2, guided);
                    break;
                case 2:
                    SUM_LOOP(sums[k], 3, runtime);
                    break;
                case 3:
#pragma omp for ordered schedule(dynamic, 4) nowait
                    for (int i = 0; i < N; i++) {
#pragma omp ordered
                        sums[k] = sums[k] * 3 % 1000003 + i;
                    }
                    break;
                default:
#pragma omp sections nowait
                    {
#pragma omp section
                        {
#pragma omp atomic
                            sums[k] += 1000;
                        }
#pragma omp section
                        {
#pragma omp atomic
                            sums[k] += 2000;
                        }
                    }
                }
            }
            if (me != 0) {
#pragma omp atomic
                done++;
            }
        }
        for (int k = 0; k < K; k++)
            total += sums[k];
    }
    printf("far ahead: total %ld\n", total);
    printf("all checks passed\n");
    return 0;
}
