/* Two threads that share one vCPU are woken together and then spin (no system call) until both
 * have run: whichever runs first finishes only if the kernel preempts it for the other, as
 * Linux does. Each round both block on one futex and the main thread, on another vCPU, wakes
 * them with one FUTEX_WAKE. It first sleeps long enough for their vCPU to stop its preemption
 * clock (nothing waits there), and an mprotect makes that idle vCPU owe a TLB flush, which it
 * does after it notices the first woken thread and before it runs it: the second wake-up then
 * reaches a vCPU that is idle but about to run a thread. A kernel that starts the clock only
 * for a thread queued while another runs (a kick from the waker) left the second thread
 * behind the spinning first one for good there: the program hung (`hrt run --idle poll`,
 * where the idle vCPU never halts; a halted one is kicked awake). With one vCPU everything
 * shares it and the program finishes too. */
#define _GNU_SOURCE
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpus.h"

enum { ROUNDS = 20 };

static atomic_int gate;    /* round number: the waiters sleep while it is unchanged */
static atomic_int arrived; /* pair threads that reached a round's futex wait */
static atomic_int done;    /* pair threads that ran after a round's wake-up */
static int pair_cpu;

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(0, sizeof set, &set);
}

static void *pair(void *arg) {
    (void)arg;
    pin(pair_cpu);
    for (int r = 0; r < ROUNDS; r++) {
        atomic_fetch_add(&arrived, 1);
        while (atomic_load(&gate) == r)
            syscall(SYS_futex, &gate, FUTEX_WAIT_PRIVATE, r, NULL, NULL, 0);
        atomic_fetch_add(&done, 1);
        while (atomic_load(&done) < 2 * (r + 1))
            ;
    }
    return NULL;
}

int main(void) {
    cpu_set_t allowed;
    sched_getaffinity(0, sizeof allowed, &allowed);
    int last = last_allowed_cpu();
    pair_cpu = last;
    int first = 0;
    while (first < last && !CPU_ISSET(first, &allowed))
        first++;
    pin(first);
    char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, pair, NULL);
    int failures = 0;
    for (int r = 0; r < ROUNDS; r++) {
        while (atomic_load(&arrived) < 2 * (r + 1))
            ;
        /* Long enough for the pair's vCPU to stop its preemption clock (nothing waits there). */
        usleep(30000);
        /* Taking write access away is a TLB shootdown, which an idle vCPU settles later. */
        page[0] = (char)r;
        failures += mprotect(page, 4096, PROT_READ) != 0;
        failures += mprotect(page, 4096, PROT_READ | PROT_WRITE) != 0;
        atomic_store(&gate, r + 1);
        syscall(SYS_futex, &gate, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("%d rounds: both threads ran after every wake-up (%d runs), mprotect failures %d\n", ROUNDS,
           atomic_load(&done), failures);
    return 0;
}
