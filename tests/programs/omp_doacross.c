/* Doacross loops (ordered(n) with depend(sink)/depend(source)) and gcc 12's scope construct,
 * written from the OpenMP specification: every result is a chain that is only right when each
 * sink waited for its source, compared with the same program's native run. */
#include <omp.h>
#include <stdio.h>

enum { N = 1000, R = 60, C = 45 };

static int check(const char *what, long got, long want) {
    printf("%s %s: %ld\n", what, got == want ? "ok" : "FAILED", got);
    return got != want;
}

/* One loop, default (static) schedule: a[i] needs a[i-1]. */
static int chain(void) {
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
    return check("doacross chain", a[N - 1], expect);
}

/* Two loops (a wavefront), each schedule: b[i][j] needs b[i-1][j] and b[i][j-1]. The loops
 * count from 1 and step by 1 and 2 so logical numbers differ from the loop variables. */
static long wave_expect(void) {
    static long b[R][2 * C];
    for (int i = 0; i < R; i++)
        for (int j = 0; j < 2 * C; j += 2)
            b[i][j] = (i == 0 || j == 0) ? i + j : (b[i - 1][j] * 7 + b[i][j - 2] * 3 + i * j) % 1000003;
    return b[R - 1][2 * C - 2];
}

#define PRAGMA(x) _Pragma(#x)
#define WAVE(name, sched)                                                                     \
    static long name(void) {                                                                 \
        static long b[R][2 * C];                                                             \
        for (int i = 0; i < R; i++)                                                          \
            for (int j = 0; j < 2 * C; j += 2)                                               \
                b[i][j] = (i == 0 || j == 0) ? i + j : 0;                                    \
        PRAGMA(omp parallel for ordered(2) schedule sched)                                   \
        for (int i = 1; i < R; i++)                                                          \
            for (int j = 2; j < 2 * C; j += 2) {                                             \
                PRAGMA(omp ordered depend(sink : i - 1, j) depend(sink : i, j - 2))          \
                b[i][j] = (b[i - 1][j] * 7 + b[i][j - 2] * 3 + i * j) % 1000003;             \
                PRAGMA(omp ordered depend(source))                                           \
            }                                                                                \
        return b[R - 1][2 * C - 2];                                                          \
    }
WAVE(wave_static, (static))
WAVE(wave_static_1, (static, 1))
WAVE(wave_dynamic, (dynamic, 3))
WAVE(wave_guided, (guided))
WAVE(wave_runtime, (runtime))

/* An unsigned long long loop (the _ull_ entry points), guided. */
static int chain_ull(void) {
    static long a[N];
    a[0] = 5;
#pragma omp parallel for ordered(1) schedule(guided, 2)
    for (unsigned long long i = 1; i < N; i++) {
#pragma omp ordered depend(sink : i - 1)
        a[i] = a[i - 1] * 5 % 1000003 + (long)i;
#pragma omp ordered depend(source)
    }
    long expect = 5;
    for (long i = 1; i < N; i++)
        expect = expect * 5 % 1000003 + i;
    return check("doacross ull chain", a[N - 1], expect);
}

/* scope: a plain reduction, and a task reduction (GOMP_scope_start). */
static int scope(void) {
    int s = 0, t = 0, n = 0;
#pragma omp parallel
    {
#pragma omp single
        n = omp_get_num_threads();
#pragma omp scope reduction(+ : s)
        s += 1;
#pragma omp scope reduction(task, + : t)
        {
#pragma omp task in_reduction(+ : t)
            t += 2;
        }
    }
    return check("scope reduction", s, n) | check("scope task reduction", t, 2 * n);
}

int main(void) {
    int bad = chain();
    long want = wave_expect();
    bad |= check("wavefront static", wave_static(), want);
    bad |= check("wavefront static,1", wave_static_1(), want);
    bad |= check("wavefront dynamic,3", wave_dynamic(), want);
    bad |= check("wavefront guided", wave_guided(), want);
    bad |= check("wavefront runtime", wave_runtime(), want);
    bad |= chain_ull();
    bad |= scope();
    if (!bad)
        printf("all checks passed\n");
    return bad;
}
