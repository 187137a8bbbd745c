/* Contended critical sections (unnamed and named), omp_lock_t, omp_nest_lock_t (taken twice,
 * and by omp_test_lock in a loop) and the atomic fallback lock:
 * every update inside them must count, whether a waiting thread spins or sleeps on the lock
 * word (GOMP_SPINCOUNT=0 sends it straight to sleep, so each unlock must wake a sleeper). */
#include <omp.h>
#include <stdio.h>

#define ROUNDS 20000

static omp_lock_t lock;
static omp_nest_lock_t nest;
static long unnamed, named, locked, nested, tested;
static long double wide; /* an atomic update gcc cannot inline: GOMP_atomic_start/end */

int main(void) {
    omp_init_lock(&lock);
    omp_init_nest_lock(&nest);
    int team = 0;
#pragma omp parallel
    {
#pragma omp single
        team = omp_get_num_threads();
        for (int i = 0; i < ROUNDS; i++) {
#pragma omp critical
            {
                unnamed++;
                if ((i & 255) == 0) /* hold it a while now and then: others queue up */
                    for (volatile int k = 0; k < 2000; k++)
                        ;
            }
#pragma omp critical(counter)
            named++;
            omp_set_lock(&lock);
            locked++;
            omp_unset_lock(&lock);
            omp_set_nest_lock(&nest);
            omp_set_nest_lock(&nest);
            nested++;
            omp_unset_nest_lock(&nest);
            omp_unset_nest_lock(&nest);
            if ((i & 1023) == 0) {
                while (!omp_test_lock(&lock))
                    ;
                tested++;
                omp_unset_lock(&lock);
            }
#pragma omp atomic
            wide += 1.0L;
        }
    }
    omp_destroy_lock(&lock);
    omp_destroy_nest_lock(&nest);
    long want = (long)team * ROUNDS;
    int ok = unnamed == want && named == want && locked == want && nested == want &&
             tested == (long)team * ((ROUNDS + 1023) / 1024) && wide == (long double)want;
    printf("%s\n", ok ? "all checks passed" : "a lost update");
    if (!ok)
        printf("team %d: unnamed %ld named %ld locked %ld nested %ld tested %ld atomic %.0Lf, want %ld each\n", team,
               unnamed, named, locked, nested, tested, wide, want);
    return !ok;
}
