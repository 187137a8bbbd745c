// Mappings that grow down (MAP_GROWSDOWN): a touch of the free memory below one extends it to
// the touched page, which reads zero and keeps what is written (on a thread's stack too, as
// LTP's mmap18 makes one); the growth stops at RLIMIT_STACK and 256 pages above an accessible
// mapping (Linux's stack_guard_gap), where the touch is SIGSEGV; a forked child's copy grows
// too; PROT_GROWSDOWN reaches down to the mapping's start; shared anonymous memory cannot
// grow down (EINVAL). Compared with the native run.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096UL
#define RW (PROT_READ | PROT_WRITE)

static sigjmp_buf back;
static volatile int faults, fault_code;

static void on_segv(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)uc;
    faults++;
    fault_code = si->si_code;
    siglongjmp(back, 1);
}

// Reserves `reserve` bytes of free address space and maps the top `mapped` of it growing down.
static char *grows_down_at_top(size_t reserve, size_t mapped) {
    char *r = mmap(NULL, reserve, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED)
        return NULL;
    munmap(r, reserve);
    char *m = mmap(r + reserve - mapped, mapped, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_GROWSDOWN, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

// Touches (reads, then writes) `p`: "grew" with what it read, or the signal it raised.
static void touch(const char *what, char *p) {
    faults = 0;
    if (sigsetjmp(back, 1) == 0) {
        char was = *(volatile char *)p;
        *(volatile char *)p = 'x';
        printf("%-44s grew, read %d, kept %c\n", what, was, *(volatile char *)p);
    } else {
        printf("%-44s SIGSEGV %s\n", what, fault_code == SEGV_MAPERR ? "MAPERR" : fault_code == SEGV_ACCERR ? "ACCERR" : "?");
    }
}

static int mapped(char *p) {
    return msync((void *)((unsigned long)p & ~(PAGE - 1)), PAGE, MS_ASYNC) == 0;
}

static void *recurse(void *limit) {
    volatile char pad[512];
    pad[0] = 1;
    if ((char *)pad > (char *)limit)
        return recurse(limit);
    return (void *)(long)pad[0];
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    struct sigaction sa = {0};
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigaction(SIGSEGV, &sa, NULL);

    // Room below: touches 1 page, then 40 pages below the mapping's start.
    char *m = grows_down_at_top(512 * PAGE, 4 * PAGE);
    if (!m)
        return 1;
    printf("mapped below the start before: %d\n", mapped(m - PAGE));
    touch("one page below", m - 1);
    touch("forty pages below", m - 40 * PAGE + 7);
    printf("mapped between the two after: %d\n", mapped(m - 20 * PAGE));
    touch("forty pages below again", m - 40 * PAGE + 7);
    // In a forked child the copy grows further; the parent's stays as it was.
    pid_t c = fork();
    if (c == 0) {
        touch("child: eighty pages below", m - 80 * PAGE);
        _exit(0);
    }
    waitpid(c, NULL, 0);
    printf("parent: eighty pages below mapped: %d\n", mapped(m - 80 * PAGE));
    // PROT_GROWSDOWN on a page in the middle reaches down to the (grown) start.
    printf("mprotect(PROT_READ|PROT_GROWSDOWN): %d\n", mprotect(m, PAGE, PROT_READ | PROT_GROWSDOWN));
    touch("write at the grown start after it", m - 40 * PAGE);
    mprotect(m - 40 * PAGE, 44 * PAGE, RW);
    char *plain = mmap(NULL, 4 * PAGE, RW, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("mprotect(PROT_GROWSDOWN) of a plain mapping: %s\n",
           mprotect(plain + PAGE, PAGE, PROT_READ | PROT_GROWSDOWN) == 0 ? "ok" : strerror(errno));

    // An accessible mapping within 256 pages below stops it: SIGSEGV, and nothing grew.
    char *g = grows_down_at_top(600 * PAGE, 4 * PAGE);
    char *low = g - 300 * PAGE;
    if (mmap(low, PAGE, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != low)
        return 1;
    touch("40 pages below, 260 above a mapping", g - 40 * PAGE);
    touch("50 pages below, 250 above a mapping", g - 50 * PAGE);
    printf("mapped at 50 pages below: %d\n", mapped(g - 50 * PAGE));
    // A PROT_NONE mapping below is no obstacle.
    mprotect(low, PAGE, PROT_NONE);
    touch("50 pages below, above a PROT_NONE page", g - 50 * PAGE);
    // Over a mapping (the first mapping above the page is not the one that grows): SIGSEGV.
    touch("at the mapping below", low + 10);
    touch("below the mapping below", low - PAGE);

    // RLIMIT_STACK bounds the mapping's size.
    struct rlimit old, rl;
    getrlimit(RLIMIT_STACK, &old);
    rl = old;
    rl.rlim_cur = 64 * PAGE;
    setrlimit(RLIMIT_STACK, &rl);
    char *s = grows_down_at_top(400 * PAGE, 4 * PAGE);
    touch("to 60 pages with a 64-page stack limit", s - 56 * PAGE);
    touch("to 70 pages with a 64-page stack limit", s - 66 * PAGE);
    setrlimit(RLIMIT_STACK, &old);

    // Replaced by a plain mapping, it grows no more.
    char *u = grows_down_at_top(400 * PAGE, 4 * PAGE);
    mmap(u, 4 * PAGE, RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    touch("below one replaced by a plain mapping", u - PAGE);

    // A thread on such a stack recursing below its mapped part (LTP's mmap18).
    char *t = grows_down_at_top(256 * PAGE + 32 * PAGE, 8 * PAGE);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstack(&attr, t + 8 * PAGE - 32 * PAGE, 32 * PAGE);
    pthread_t th;
    void *ret;
    pthread_create(&th, &attr, recurse, t + 8 * PAGE - 30 * PAGE);
    pthread_join(th, &ret);
    printf("thread recursed 30 pages deep: %ld, mapped there: %d\n", (long)ret, mapped(t + 8 * PAGE - 29 * PAGE));

    void *sh = mmap(NULL, PAGE, RW, MAP_SHARED | MAP_ANONYMOUS | MAP_GROWSDOWN, -1, 0);
    printf("shared anonymous MAP_GROWSDOWN: %s\n", sh == MAP_FAILED ? strerror(errno) : "mapped");
    printf("faults caught: done\n");
    return 0;
}
