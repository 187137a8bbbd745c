/* Contended critical sections (unnamed and named), omp_lock_t and the atomic fallback lock:
 * every update inside them must count, whether a waiting thread spins or sleeps on the lock
 * word (GOMP_SPINCOUNT=0 sends it straight to sleep, so each unlock must wake a sleeper). */
#include <omp.h>
#include <stdio.h>

#define ROUNDS 20000

static omp_lock_t lock;
static long unnamed, named, locked;
static long double wide; /* an atomic update gcc cannot inline: GOMP_atomic_start/end */

int main(void) {
    omp_init_lock(&lock);
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
#pragma omp atomic
            wide += 1.0L;
        }
    }
    omp_destroy_lock(&lock);
    long want = (long)team * ROUNDS;
    int ok = unnamed == want && named == want && locked == want && wide == (long double)want;
    printf("%s\n", ok ? "all checks passed" : "a lost update");
    if (!ok)
        printf("team %d: unnamed %ld named %ld locked %ld atomic %.0Lf, want %ld each\n", team, unnamed, named,
               locked, wide, want);
    return !ok;
}
