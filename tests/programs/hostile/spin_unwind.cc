// Unwinding out of spin-wait loops (build: g++ -O2 -fnon-call-exceptions -static -pthread).
// Under hrt, with more threads than vCPUs, such loops are rewritten to yield at every round
// (`linux::spin_sites`): a thread stopped in the rewritten loop's slot or in the yield stub
// must still be seen at the loop's own code by a signal frame, which an unwinder reads.
// - `cancel`: threads with asynchronous cancellation spin for good (after a token ring that
//   gets the loops rewritten); the main thread cancels them: each one's destructor must run.
// - `segv`: threads spin on flags in a page that the main thread then makes PROT_NONE; the
//   load faults, the SIGSEGV handler throws a C++ exception, which each thread catches after
//   its destructor ran.
// Prints the counts; the same on any machine. Usage: spin_unwind THREADS cancel|segv
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

static int threads;
static std::atomic<int> destructors{0}, arrived{0}, caught{0};
static volatile int forever[64 * 16];
static volatile int token[64 * 16];
static volatile int *volatile flags;

struct Counted {
    ~Counted() { destructors++; }
};

// A ring of turns (each thread waits for its own slot, passes the token on): enough waits
// beside ready threads for the looks to find the loop and rewrite it.
__attribute__((noinline)) static void turns(int me, int rounds) {
    for (int r = 0; r < rounds; r++) {
        while (token[me * 16] == 0)
            ;
        token[me * 16] = 0;
        token[((me + 1) % threads) * 16] = 1;
    }
}

__attribute__((noinline)) static void wait_for_good(int me) {
    while (forever[me * 16] == 0)
        ;
}

__attribute__((noinline)) static int wait_on(volatile int *flag) {
    while (*flag == 0)
        ;
    return *flag;
}

static void *cancelled(void *arg) {
    int me = (int)(long)arg;
    Counted c;
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, nullptr);
    turns(me, 200);
    arrived++;
    wait_for_good(me);
    return nullptr;
}

struct Fault {};
static void on_segv(int, siginfo_t *, void *) { throw Fault(); }

static void *faulting(void *arg) {
    int me = (int)(long)arg;
    try {
        Counted c;
        turns(me, 200);
        arrived++;
        wait_on(flags + me * 16);
    } catch (Fault &) {
        caught++;
    }
    return nullptr;
}

int main(int argc, char **argv) {
    threads = argc > 1 ? atoi(argv[1]) : 4;
    bool cancel = argc > 2 && strcmp(argv[2], "cancel") == 0;
    if (threads < 1 || threads > 64 || argc < 3 || (!cancel && strcmp(argv[2], "segv") != 0)) {
        fprintf(stderr, "usage: spin_unwind THREADS(1-64) cancel|segv\n");
        return 2;
    }
    pthread_t t[64];
    if (!cancel) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_segv;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigaction(SIGSEGV, &sa, nullptr);
        flags = (volatile int *)mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    }
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], nullptr, cancel ? cancelled : faulting, (void *)(long)i);
    token[0] = 1;
    while (arrived < threads)
        usleep(1000);
    usleep(200000); // the threads spin in their last loop meanwhile
    int ended = 0;
    if (cancel) {
        for (int i = 0; i < threads; i++)
            pthread_cancel(t[i]);
        for (int i = 0; i < threads; i++) {
            void *ret;
            pthread_join(t[i], &ret);
            ended += ret == PTHREAD_CANCELED;
        }
        printf("cancel: threads %d, cancelled %d, destructors %d\n", threads, ended, destructors.load());
    } else {
        mprotect((void *)flags, 1 << 16, PROT_NONE);
        for (int i = 0; i < threads; i++)
            pthread_join(t[i], nullptr);
        ended = caught;
        printf("segv: threads %d, caught %d, destructors %d\n", threads, ended, destructors.load());
    }
    bool ok = ended == threads && destructors == threads;
    printf("%s\n", ok ? "all unwound" : "FAILED");
    return !ok;
}
