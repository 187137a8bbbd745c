// A large PROT_NONE reservation opened by mprotect (as glibc opens a thread's stack): every
// part of it must behave as mapped memory at once, whether the program touched it yet or not.
// (HRT leaves its untouched 2 MiB pages not present until first used.) The kernel reads and
// writes untouched parts for system calls, a part is closed again, made read-only, unmapped or
// moved before anyone touched it, two threads touch the same untouched page at once, a thread
// runs on a stack in an untouched part, and a forked child touches what its parent never did.
// The output must match a native run.
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1UL << 20)
#define PAGE 4096UL
#define SIZE (16 * MIB) /* HRT leaves parts of reservations up to 256 MiB lazy */

static sigjmp_buf jump;
static volatile int last_code;

static void on_segv(int sig, siginfo_t *info, void *ctx) {
    (void)sig;
    (void)ctx;
    last_code = info->si_code;
    siglongjmp(jump, 1);
}

/// "ok", or how touching `p` faulted (reading, or writing with `write`).
static const char *touch(volatile char *p, int write) {
    if (sigsetjmp(jump, 1) == 0) {
        if (write)
            *p = 7;
        else
            (void)*p;
        return "ok";
    }
    return last_code == SEGV_ACCERR ? "SIGSEGV (access)" : last_code == SEGV_MAPERR ? "SIGSEGV (unmapped)" : "SIGSEGV";
}

/// Bytes of `[p, p + len)` that are not zero, one look every 256 bytes.
static long nonzero(const char *p, size_t len) {
    long n = 0;
    for (size_t i = 0; i < len; i += 256)
        n += p[i] != 0;
    return n;
}

static char *base; /* the opened part: [base, base + SIZE) */

/// Where the `n`th MiB of the opened part starts.
static char *at_mib(int n) {
    return base + (size_t)n * MIB;
}

static volatile int go;
static volatile long touched_sum[2];

static void *toucher(void *arg) {
    long me = (long)arg;
    while (!go)
        ;
    long sum = 0;
    // Both threads write and read the same untouched pages: 2 MiB to 4 MiB.
    for (size_t off = 2 * MIB; off < 4 * MIB; off += 16 * 1024) {
        base[off + me] = (char)(1 + me);
        sum += base[off + me];
    }
    touched_sum[me] = sum;
    return NULL;
}

static void *on_stack(void *arg) {
    volatile char deep[64 * 1024];
    memset((char *)deep, 3, sizeof deep);
    long sum = 0;
    for (size_t i = 0; i < sizeof deep; i += 4096)
        sum += deep[i];
    *(long *)arg = sum;
    return NULL;
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);

    char *r = mmap(0, SIZE + PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (r == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    base = r + PAGE;
    printf("guard before opening: %s\n", touch(r, 0));
    if (mprotect(base, SIZE, PROT_READ | PROT_WRITE) != 0) {
        perror("mprotect");
        return 1;
    }
    printf("guard after opening: %s, top: %s\n", touch(r, 0), touch(base + SIZE - 1, 1));

    // The kernel writes into and reads from parts nobody touched.
    int fds[2];
    if (pipe(fds) != 0) {
        perror("pipe");
        return 1;
    }
    const char msg[] = "through the pipe";
    write(fds[1], msg, sizeof msg);
    ssize_t got = read(fds[0], at_mib(4) + 12345, sizeof msg);
    printf("read into an untouched part: %zd bytes, same: %s\n", got,
           memcmp(at_mib(4) + 12345, msg, sizeof msg) == 0 ? "yes" : "no");
    ssize_t put = write(fds[1], at_mib(5) + 777, 64);
    char back[64];
    memset(back, 1, sizeof back);
    read(fds[0], back, sizeof back);
    printf("write from an untouched part: %zd bytes, nonzero %ld\n", put, nonzero(back, 64) + (back[63] != 0));

    // An untouched 2 MiB page reads zero all through; a written pattern stays.
    printf("untouched MiB 6-8 nonzero: %ld\n", nonzero(at_mib(6), 2 * MIB));
    memset(at_mib(7), 0x5a, 4096);
    printf("after a write at MiB 7: nonzero %ld\n", nonzero(at_mib(6), 2 * MIB));

    // One page closed again inside an untouched part: it faults, its neighbours do not.
    char *closed = at_mib(1) + 8 * PAGE;
    mprotect(closed, PAGE, PROT_NONE);
    printf("closed page: %s; page below: %s; page above: %s\n", touch(closed, 0), touch(closed - PAGE, 1),
           touch(closed + PAGE, 1));

    // A whole untouched 2 MiB made read-only: reads zero, writes fault.
    char *ro = (char *)(((uintptr_t)at_mib(12) + 2 * MIB - 1) & ~(2 * MIB - 1));
    mprotect(ro, 2 * MIB, PROT_READ);
    printf("read-only 2 MiB: read %s, nonzero %ld, write %s\n", touch(ro + 5000, 0), nonzero(ro, 2 * MIB),
           touch(ro + 5000, 1));

    // An untouched part unmapped: it faults as unmapped; its neighbours are still usable.
    char *gone = at_mib(8);
    munmap(gone, 2 * MIB);
    printf("unmapped 2 MiB: %s; below: %s; above: %s\n", touch(gone + 100, 0), touch(gone - 1, 1),
           touch(gone + 2 * MIB, 1));

    // Part of an untouched page moved elsewhere (the kernel copies it): it reads zero there
    // and faults here.
    char *from = at_mib(11) + 16 * PAGE;
    char *to = mremap(from, 16 * PAGE, 16 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, at_mib(14) + 16 * PAGE);
    printf("moved: %s, nonzero %ld, old place: %s\n", to == MAP_FAILED ? "failed" : "yes",
           to == MAP_FAILED ? -1 : nonzero(to, 16 * PAGE), touch(from + 100, 0));

    // Two threads touch the same untouched pages at once.
    pthread_t t[2];
    for (long i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, toucher, (void *)i);
    go = 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("two threads on untouched pages: sums %ld %ld\n", touched_sum[0], touched_sum[1]);

    // A thread whose stack lies in an untouched part.
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, at_mib(10), MIB);
    long sum = 0;
    pthread_t s;
    if (pthread_create(&s, &attr, on_stack, &sum) == 0)
        pthread_join(s, NULL);
    printf("thread on an untouched stack: sum %ld\n", sum);

    // A forked child touches what the parent never did; the parent's copy stays zero.
    char *child_page = at_mib(7) + 3 * PAGE;
    pid_t pid = fork();
    if (pid == 0) {
        int zero = child_page[10] == 0;
        child_page[10] = 9;
        _exit(zero && child_page[10] == 9 ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("child: exit %d; parent's page still zero: %s\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1,
           child_page[10] == 0 ? "yes" : "no");

    // All of it unmapped: it faults as unmapped.
    munmap(r, SIZE + PAGE);
    printf("after munmap: top %s, bottom %s\n", touch(base + SIZE - 1, 0), touch(base, 0));
    return 0;
}
