// membarrier(2) as Linux answers it: QUERY, each command before and after its REGISTER (the
// PRIVATE_EXPEDITED ones are EPERM before), bad flags and commands (EINVAL), the registrations
// a forked child keeps and an exec drops; then the use it exists for, an asymmetric Dekker
// between two threads: one side stores and loads with only a compiler barrier, the other
// stores, calls membarrier(PRIVATE_EXPEDITED) and loads, and the two loads never both miss
// the other side's store. Compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define SHOW_WIDTH 44
#include "show.h"

#define GET_REGISTRATIONS 512

static long mb(int cmd, unsigned flags) {
    return syscall(SYS_membarrier, cmd, flags, 0);
}

// The Dekker rounds: the main thread (the slow side) starts round `turn`, the other thread
// (the fast side) says when it has done its part in `done`.
#define ROUNDS 500
static volatile int x, y, seen_by_fast, seen_by_slow;
static int turn, done;

// The fast side: no fence between its store and its load, only the compiler's barrier.
static void *fast_side(void *arg) {
    (void)arg;
    for (int r = 1; r <= ROUNDS; r++) {
        while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != r)
            __builtin_ia32_pause();
        x = 1;
        __asm__ volatile("" ::: "memory");
        seen_by_fast = y;
        __atomic_store_n(&done, r, __ATOMIC_RELEASE);
    }
    return NULL;
}

static void dekker(void) {
    pthread_t t;
    pthread_create(&t, NULL, fast_side, NULL);
    int both_missed = 0;
    for (int r = 1; r <= ROUNDS; r++) {
        x = y = 0;
        __atomic_store_n(&turn, r, __ATOMIC_RELEASE);
        y = 1;
        if (mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0)
            perror("membarrier");
        seen_by_slow = x;
        while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) != r)
            __builtin_ia32_pause();
        both_missed += seen_by_fast == 0 && seen_by_slow == 0;
    }
    pthread_join(t, NULL);
    printf("%-*s %d of %d\n", SHOW_WIDTH, "dekker rounds where both loads missed", both_missed, ROUNDS);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 1 && !strcmp(argv[1], "exec")) {
        show("after exec: registrations", mb(GET_REGISTRATIONS, 0));
        show("after exec: private expedited", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0));
        return 0;
    }
    show("query", mb(MEMBARRIER_CMD_QUERY, 0));
    show("query, flags 1", mb(MEMBARRIER_CMD_QUERY, 1));
    show("registrations", mb(GET_REGISTRATIONS, 0));
    show("private expedited before register", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0));
    show("sync core before register", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0));
    show("rseq before register", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0));
    show("global", mb(MEMBARRIER_CMD_GLOBAL, 0));
    show("global expedited", mb(MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0));
    show("register global expedited", mb(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0));
    show("register private expedited", mb(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0));
    show("private expedited", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0));
    show("private expedited, flags 1", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 1));
    show("register sync core", mb(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0));
    show("sync core", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0));
    show("register rseq", mb(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ, 0));
    show("rseq", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0));
    show("rseq, flag cpu", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, MEMBARRIER_CMD_FLAG_CPU));
    show("rseq, flags 2", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 2));
    show("registrations", mb(GET_REGISTRATIONS, 0));
    show("command 3", mb(3, 0));
    show("command 1024", mb(1024, 0));
    show("command -1", mb(-1, 0));

    pid_t c = fork();
    if (c == 0) {
        show("forked child: registrations", mb(GET_REGISTRATIONS, 0));
        show("forked child: private expedited", mb(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0));
        execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(c, &st, 0);
    show("child's status", st);

    dekker();
    return 0;
}
