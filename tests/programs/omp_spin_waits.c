// Spin-heavy OpenMP: many short rounds, each with a `single`, a barrier, a hand-written
// spin handoff (one thread sets a flag, the next spins on it with PAUSE and no futex) and a
// reduction, so that threads spend most of their time spinning while others have the work.
// With more vCPUs than host CPUs, `hrt run` halts a vCPU it finds spinning (README, "More
// vCPUs than host CPUs"): the results must not change. Output depends only on the rounds and
// the team size, never on timing.
#include <omp.h>
#include <stdio.h>

#define ROUNDS 50
#define MAXT 64

static int failures;
static long parts[ROUNDS + 1];
// Per thread (padded): the round whose handoff it has seen.
static struct {
    volatile int round;
    int pad[15];
} flag[MAXT];

static void fail(const char *what, long a, long b) {
#pragma omp critical
    if (failures++ < 10) printf("FAIL %s: %ld %ld\n", what, a, b);
}

int main(void) {
    long singles = 0, sum = 0, team = 0;
#pragma omp parallel
    {
        int n = omp_get_num_threads(), t = omp_get_thread_num();
#pragma omp single
        team = n;
        for (int r = 1; r <= ROUNDS; r++) {
#pragma omp single
            singles++;
            // The handoff: thread 0 starts it, each thread passes it on to the next.
            if (t > 0 && n <= MAXT) {
                while (flag[t].round != r) __builtin_ia32_pause();
            }
            if (n <= MAXT) flag[(t + 1) % n].round = r;
            if (t == 0 && n <= MAXT) {
                while (flag[0].round != r) __builtin_ia32_pause();
            }
#pragma omp for reduction(+ : parts[r : 1]) schedule(static)
            for (int i = 0; i < 64; i++) parts[r] += (long)r * i;
            if (parts[r] != (long)r * 2016) fail("reduction", r, parts[r]);
#pragma omp single
            sum += parts[r];
        }
    }
    if (singles != ROUNDS) fail("singles", singles, ROUNDS);
    if (sum != 2016L * ROUNDS * (ROUNDS + 1) / 2) fail("sum", sum, 2016L * ROUNDS * (ROUNDS + 1) / 2);
    printf("team of %ld, %ld rounds, sum %ld\n", team, singles, sum);
    if (failures == 0) printf("all checks passed\n");
    return failures != 0;
}
