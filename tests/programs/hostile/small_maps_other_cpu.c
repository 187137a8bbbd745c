/* Small mappings (1-4 pages) that a thread on the other CPU uses, then loses: after the main
 * thread's mprotect or munmap returns, that thread's next access faults, whether it read or
 * wrote the page a moment before (its TLB holds the page) or never touched it. The kernel makes
 * the 4 KiB leaves of small mappings present without the accessed bit and flushes other CPUs
 * only for leaves whose accessed bit a page walk set: a TLB fill the bit missed would let the
 * other thread keep using a page it no longer has.
 * Prints one line per kind of change, with the faults seen out of the accesses tried. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { ROUNDS = 150, PAGE = 4096 };

/* What the main thread asks of the user thread, numbered: the user does order `seq` once and
 * says so in `done`. */
enum { KEEP_USING, ACCESS, QUIT };
enum { READ, WRITE };

static _Atomic int order;
static _Atomic unsigned seq, done;
static char *volatile page;
static volatile int how;
static _Atomic int faulted;
static sigjmp_buf back;

static void on_segv(int sig) {
    (void)sig;
    siglongjmp(back, 1);
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

static void use_page(void) {
    if (how == WRITE)
        *(volatile char *)page = 1;
    else
        (void)*(volatile char *)page;
}

static void *user(void *arg) {
    (void)arg;
    pin(1);
    unsigned seen = 0;
    for (;;) {
        unsigned s;
        while ((s = atomic_load(&seq)) == seen)
            ;
        seen = s;
        int o = atomic_load(&order);
        if (o == QUIT) {
            atomic_store(&done, s);
            return 0;
        }
        if (o == KEEP_USING) {
            /* Keeps the translation in this CPU's TLB until the next order, while the main
             * thread changes it; a read after the change may fault already. */
            if (sigsetjmp(back, 1) == 0) {
                use_page();
                atomic_store(&done, s);
                while (atomic_load(&seq) == s)
                    (void)*(volatile char *)page;
            }
            continue;
        }
        if (sigsetjmp(back, 1) == 0) {
            use_page();
            atomic_store(&faulted, 0);
        } else {
            atomic_store(&faulted, 1);
        }
        atomic_store(&done, s);
    }
}

/* Gives the user thread order `o` and waits until it has done it. */
static void tell(int o) {
    atomic_store(&order, o);
    unsigned s = atomic_fetch_add(&seq, 1) + 1;
    while (atomic_load(&done) != s)
        ;
}

/* One kind of change: `pages` mapped, the user touches page `at` (or none with -1) as `use`,
 * keeps reading it while the main thread unmaps it (`unmap`) or protects it with `prot`; then
 * the user's access `then` must fault (or not: `prot` still allows it). */
static void round_of(const char *what, int pages, int at, int use, int unmap, int prot, int then) {
    int faults = 0;
    for (int r = 0; r < ROUNDS; r++) {
        char *m = mmap(0, pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) {
            perror("mmap");
            return;
        }
        page = m + (at < 0 ? pages - 1 : at) * PAGE;
        if (at >= 0) {
            how = use;
            tell(KEEP_USING);
        }
        if (unmap)
            munmap(m, pages * PAGE);
        else
            mprotect(m, pages * PAGE, prot);
        how = then;
        tell(ACCESS);
        faults += atomic_load(&faulted);
        if (!unmap)
            munmap(m, pages * PAGE);
    }
    printf("%s: %d of %d accesses faulted\n", what, faults, ROUNDS);
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_segv;
    sa.sa_flags = SA_NODEFER;
    sigaction(SIGSEGV, &sa, 0);
    pin(0);
    pthread_t t;
    if (pthread_create(&t, 0, user, 0) != 0) {
        perror("pthread_create");
        return 1;
    }
    for (int pages = 1; pages <= 4; pages++) {
        char what[96];
        snprintf(what, sizeof what, "%d page(s), read there, munmap, read", pages);
        round_of(what, pages, 0, READ, 1, 0, READ);
        snprintf(what, sizeof what, "%d page(s), written there, PROT_NONE, read", pages);
        round_of(what, pages, pages - 1, WRITE, 0, PROT_NONE, READ);
        snprintf(what, sizeof what, "%d page(s), written there, PROT_READ, write", pages);
        round_of(what, pages, 0, WRITE, 0, PROT_READ, WRITE);
        snprintf(what, sizeof what, "%d page(s), written there, PROT_READ, read", pages);
        round_of(what, pages, 0, WRITE, 0, PROT_READ, READ);
        snprintf(what, sizeof what, "%d page(s), untouched, PROT_NONE, read", pages);
        round_of(what, pages, -1, READ, 0, PROT_NONE, READ);
        snprintf(what, sizeof what, "%d page(s), untouched, munmap, write", pages);
        round_of(what, pages, -1, WRITE, 1, 0, WRITE);
    }
    tell(QUIT);
    pthread_join(t, 0);
    printf("small maps on the other CPU: done\n");
    return 0;
}
