/* POSIX threads: 200 threads created and joined in batches, a mutex-protected counter, a
 * condition-variable producer/consumer over a bounded buffer, pthread_barrier phases, __thread
 * variables, thread-specific data with destructors, pthread_once, a read-write lock, and
 * detached threads that report completion through a semaphore. Prints only results that do not
 * depend on scheduling or on the number of CPUs. Exit status 0 when every check passed. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void report(const char *what, long got, long want) {
    printf("%-52s %ld (expected %ld) %s\n", what, got, want, got == want ? "ok" : "FAILED");
    failures += got != want;
}

static void must(int err, const char *what) {
    if (err) {
        printf("%s failed: error %d\n", what, err);
        exit(1);
    }
}

/* --- 200 threads, mutex counter, __thread --------------------------------------------------- */

enum { TOTAL_THREADS = 200, BATCH = 25, INCREMENTS = 300 };

static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static __thread long tls_value = 12345;
static __thread char tls_block[256];
static long tls_initial_ok, tls_kept_ok;

static void *counting_thread(void *arg) {
    long id = (long)(intptr_t)arg;
    int initial_ok = tls_value == 12345 && tls_block[0] == 0 && tls_block[255] == 0;
    tls_value = id;
    memset(tls_block, (int)(id & 0xff), sizeof tls_block);
    for (int i = 0; i < INCREMENTS; i++) {
        pthread_mutex_lock(&counter_lock);
        counter++;
        pthread_mutex_unlock(&counter_lock);
    }
    int kept_ok = tls_value == id && tls_block[0] == (char)(id & 0xff) && tls_block[255] == (char)(id & 0xff);
    pthread_mutex_lock(&counter_lock);
    tls_initial_ok += initial_ok;
    tls_kept_ok += kept_ok;
    pthread_mutex_unlock(&counter_lock);
    return (void *)(intptr_t)(id * 2 + 1);
}

static void many_threads(void) {
    long joined = 0, returns_ok = 0;
    tls_value = -1;
    for (int base = 0; base < TOTAL_THREADS; base += BATCH) {
        pthread_t t[BATCH];
        for (int i = 0; i < BATCH; i++)
            must(pthread_create(&t[i], NULL, counting_thread, (void *)(intptr_t)(base + i)), "pthread_create");
        for (int i = 0; i < BATCH; i++) {
            void *ret;
            must(pthread_join(t[i], &ret), "pthread_join");
            joined++;
            returns_ok += (intptr_t)ret == (intptr_t)(base + i) * 2 + 1;
        }
    }
    report("threads created and joined", joined, TOTAL_THREADS);
    report("join return values", returns_ok, TOTAL_THREADS);
    report("mutex-protected counter", counter, (long)TOTAL_THREADS * INCREMENTS);
    report("__thread initial values seen by new threads", tls_initial_ok, TOTAL_THREADS);
    report("__thread values kept per thread", tls_kept_ok, TOTAL_THREADS);
    report("main thread's __thread value untouched", tls_value, -1);
}

/* --- bounded buffer: 3 producers, 2 consumers ------------------------------------------------ */

enum { PRODUCERS = 3, CONSUMERS = 2, ITEMS_PER_PRODUCER = 2000, CAPACITY = 16 };

static struct {
    pthread_mutex_t lock;
    pthread_cond_t not_full, not_empty;
    long items[CAPACITY];
    int head, count, producers_left;
} buffer = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0, PRODUCERS};

static void *producer(void *arg) {
    long id = (long)(intptr_t)arg;
    for (long i = 1; i <= ITEMS_PER_PRODUCER; i++) {
        pthread_mutex_lock(&buffer.lock);
        while (buffer.count == CAPACITY)
            pthread_cond_wait(&buffer.not_full, &buffer.lock);
        buffer.items[(buffer.head + buffer.count) % CAPACITY] = id * 1000000 + i;
        buffer.count++;
        pthread_cond_signal(&buffer.not_empty);
        pthread_mutex_unlock(&buffer.lock);
    }
    pthread_mutex_lock(&buffer.lock);
    buffer.producers_left--;
    pthread_cond_broadcast(&buffer.not_empty);
    pthread_mutex_unlock(&buffer.lock);
    return NULL;
}

struct consumed {
    long count, sum, order_violations;
};

static void *consumer(void *arg) {
    struct consumed *c = arg;
    long last[PRODUCERS] = {0};
    for (;;) {
        pthread_mutex_lock(&buffer.lock);
        while (buffer.count == 0 && buffer.producers_left > 0)
            pthread_cond_wait(&buffer.not_empty, &buffer.lock);
        if (buffer.count == 0) {
            pthread_mutex_unlock(&buffer.lock);
            return NULL;
        }
        long v = buffer.items[buffer.head];
        buffer.head = (buffer.head + 1) % CAPACITY;
        buffer.count--;
        pthread_cond_signal(&buffer.not_full);
        pthread_mutex_unlock(&buffer.lock);
        long p = v / 1000000, seq = v % 1000000;
        if (p < 0 || p >= PRODUCERS || seq <= last[p])
            c->order_violations++;
        else
            last[p] = seq;
        c->count++;
        c->sum += v;
    }
}

static void producer_consumer(void) {
    pthread_t p[PRODUCERS], c[CONSUMERS];
    struct consumed got[CONSUMERS];
    memset(got, 0, sizeof got);
    for (int i = 0; i < CONSUMERS; i++)
        must(pthread_create(&c[i], NULL, consumer, &got[i]), "pthread_create consumer");
    for (int i = 0; i < PRODUCERS; i++)
        must(pthread_create(&p[i], NULL, producer, (void *)(intptr_t)i), "pthread_create producer");
    for (int i = 0; i < PRODUCERS; i++)
        must(pthread_join(p[i], NULL), "pthread_join producer");
    long count = 0, sum = 0, violations = 0;
    for (int i = 0; i < CONSUMERS; i++) {
        must(pthread_join(c[i], NULL), "pthread_join consumer");
        count += got[i].count;
        sum += got[i].sum;
        violations += got[i].order_violations;
    }
    long want_sum = 0;
    for (long p = 0; p < PRODUCERS; p++)
        want_sum += p * 1000000 * ITEMS_PER_PRODUCER + (long)ITEMS_PER_PRODUCER * (ITEMS_PER_PRODUCER + 1) / 2;
    report("producer/consumer items", count, (long)PRODUCERS * ITEMS_PER_PRODUCER);
    report("producer/consumer sum", sum, want_sum);
    report("per-producer order violations", violations, 0);
    report("buffer empty at the end", buffer.count, 0);
}

/* --- barrier phases ---------------------------------------------------------------------------- */

enum { BARRIER_THREADS = 8, PHASES = 20 };

static pthread_barrier_t barrier;
static int phase_slots[BARRIER_THREADS];
static long serial_count, phase_errors;
static pthread_mutex_t phase_lock = PTHREAD_MUTEX_INITIALIZER;

static void *barrier_thread(void *arg) {
    int id = (int)(intptr_t)arg;
    for (int phase = 1; phase <= PHASES; phase++) {
        phase_slots[id] = phase;
        int r = pthread_barrier_wait(&barrier);
        if (r != 0 && r != PTHREAD_BARRIER_SERIAL_THREAD) {
            pthread_mutex_lock(&phase_lock);
            phase_errors++;
            pthread_mutex_unlock(&phase_lock);
        }
        int wrong = 0;
        for (int i = 0; i < BARRIER_THREADS; i++)
            wrong += __atomic_load_n(&phase_slots[i], __ATOMIC_RELAXED) != phase;
        pthread_mutex_lock(&phase_lock);
        serial_count += r == PTHREAD_BARRIER_SERIAL_THREAD;
        phase_errors += wrong != 0;
        pthread_mutex_unlock(&phase_lock);
        /* Nobody writes the next phase before everyone has checked this one. */
        pthread_barrier_wait(&barrier);
    }
    return NULL;
}

static void barriers(void) {
    pthread_t t[BARRIER_THREADS];
    must(pthread_barrier_init(&barrier, NULL, BARRIER_THREADS), "pthread_barrier_init");
    for (int i = 0; i < BARRIER_THREADS; i++)
        must(pthread_create(&t[i], NULL, barrier_thread, (void *)(intptr_t)i), "pthread_create barrier");
    for (int i = 0; i < BARRIER_THREADS; i++)
        must(pthread_join(t[i], NULL), "pthread_join barrier");
    pthread_barrier_destroy(&barrier);
    report("barrier: one serial thread per phase", serial_count, PHASES);
    report("barrier: phases where a thread saw a stale slot", phase_errors, 0);
}

/* --- thread-specific data, once, rwlock ------------------------------------------------------ */

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static long once_runs, destructor_runs, destructor_sum;
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static long rw_value;
enum { RW_ROUNDS = 100 };

static void destructor(void *p) {
    pthread_mutex_lock(&counter_lock);
    destructor_runs++;
    destructor_sum += *(long *)p;
    pthread_mutex_unlock(&counter_lock);
    free(p);
}

static void init_once(void) {
    once_runs++;
    must(pthread_key_create(&key, destructor), "pthread_key_create");
}

static void *specific_thread(void *arg) {
    pthread_once(&once, init_once);
    long *v = malloc(sizeof *v);
    *v = (long)(intptr_t)arg;
    pthread_setspecific(key, v);
    for (int i = 0; i < RW_ROUNDS; i++) {
        pthread_rwlock_wrlock(&rwlock);
        rw_value++;
        pthread_rwlock_unlock(&rwlock);
        pthread_rwlock_rdlock(&rwlock);
        long seen = rw_value;
        pthread_rwlock_unlock(&rwlock);
        (void)seen;
    }
    long ok = *(long *)pthread_getspecific(key) == (long)(intptr_t)arg;
    return (void *)ok;
}

static void specific(void) {
    enum { N = 12 };
    pthread_t t[N];
    for (int i = 0; i < N; i++)
        must(pthread_create(&t[i], NULL, specific_thread, (void *)(intptr_t)(i + 1)), "pthread_create specific");
    long ok = 0;
    for (int i = 0; i < N; i++) {
        void *r;
        must(pthread_join(t[i], &r), "pthread_join specific");
        ok += (long)(intptr_t)r;
    }
    report("pthread_once runs", once_runs, 1);
    report("pthread_getspecific per thread", ok, N);
    report("key destructors run", destructor_runs, N);
    report("key destructor argument sum", destructor_sum, (long)N * (N + 1) / 2);
    report("rwlock-protected counter", rw_value, (long)N * RW_ROUNDS);
}

/* --- detached threads ------------------------------------------------------------------------ */

enum { DETACHED = 32 };

static sem_t done_sem;
static long detached_sum;

static void *detached_thread(void *arg) {
    long id = (long)(intptr_t)arg;
    __atomic_fetch_add(&detached_sum, id, __ATOMIC_SEQ_CST);
    sem_post(&done_sem);
    return NULL;
}

static void detached(void) {
    must(sem_init(&done_sem, 0, 0) ? errno : 0, "sem_init");
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (int i = 1; i <= DETACHED; i++) {
        pthread_t t;
        must(pthread_create(&t, i % 2 ? &attr : NULL, detached_thread, (void *)(intptr_t)i), "pthread_create detached");
        if (i % 2 == 0)
            must(pthread_detach(t), "pthread_detach");
    }
    pthread_attr_destroy(&attr);
    int waited = 0;
    for (int i = 0; i < DETACHED; i++) {
        while (sem_wait(&done_sem) != 0 && errno == EINTR) {
        }
        waited++;
    }
    report("detached threads signalled completion", waited, DETACHED);
    report("detached threads' sum", __atomic_load_n(&detached_sum, __ATOMIC_SEQ_CST), (long)DETACHED * (DETACHED + 1) / 2);
    errno = 0;
    report("semaphore empty afterwards (sem_trywait gives EAGAIN)", sem_trywait(&done_sem) != 0 && errno == EAGAIN, 1);
}

int main(void) {
    many_threads();
    producer_consumer();
    barriers();
    specific();
    detached();
    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
