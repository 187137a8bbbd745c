// Stack overflow and page protections: each case (argv[1]) prints what it is about to do,
// then does something Linux answers with SIGSEGV (status 139) or with a result it prints.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <unistd.h>

static void say(const char *s) {
    fputs(s, stdout);
    fputc('\n', stdout);
    fflush(stdout);
}

// Each frame touches both ends of a 1 KiB buffer, so every stack page is written in order
// and the first page below the stack is hit (no frame jumps over a guard). The recursion
// uses 256 KiB more than the stack has, then returns: where nothing guards the stack, the
// program survives (having written below its stack) and says so.
__attribute__((noinline)) static int recurse(long n, long max) {
    volatile char buf[1024];
    buf[0] = (char)n;
    buf[sizeof buf - 1] = (char)n;
    if (n >= max) return 0;
    return recurse(n + 1, max) + buf[0];
}

static long frames_beyond(size_t stack) {
    return (long)((stack + (256 << 10)) / 1024);
}

static void *thread_recurse(void *arg) {
    size_t stack = 0;
    pthread_attr_t attr;
    pthread_getattr_np(pthread_self(), &attr);
    pthread_attr_getstacksize(&attr, &stack);
    say("thread: recursing");
    recurse(1, frames_beyond(stack));
    say("thread: survived (wrong)");
    return arg;
}

struct grow_args {
    volatile char *page;
    int ready, go;
};

static void *grow_reader(void *arg) {
    struct grow_args *a = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(1, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    long sum = 0;
    for (int i = 0; i < 1000; i++) sum += a->page[0];
    __atomic_store_n(&a->ready, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&a->go, __ATOMIC_ACQUIRE)) sum += a->page[0];
    a->page[0] = (char)(sum > 0 ? 42 : 41);
    return NULL;
}

static char *map(size_t len, int prot) {
    char *p = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    return p;
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "";
    long page = sysconf(_SC_PAGESIZE);
    if (!strcmp(c, "main")) {
        struct rlimit lim;
        getrlimit(RLIMIT_STACK, &lim);
        say("main: recursing");
        recurse(1, frames_beyond(lim.rlim_cur));
        say("main: survived (wrong)");
    } else if (!strcmp(c, "thread")) {
        pthread_t t;
        pthread_create(&t, NULL, thread_recurse, NULL);
        pthread_join(t, NULL);
    } else if (!strcmp(c, "write_readonly")) {
        char *p = map(3 * page, PROT_READ | PROT_WRITE);
        p[page] = 42;
        if (mprotect(p + page, page, PROT_READ)) perror("mprotect");
        printf("read-only page still reads %d; neighbours write: ", p[page]);
        p[0] = 1;
        p[2 * page] = 2;
        say("ok");
        say("writing the read-only page");
        p[page] = 7;
        say("survived (wrong)");
    } else if (!strcmp(c, "read_none")) {
        char *p = map(2 * page, PROT_NONE);
        say("reading a PROT_NONE mapping");
        printf("%d\n", ((volatile char *)p)[page]);
        say("survived (wrong)");
    } else if (!strcmp(c, "read_mprotect_none")) {
        // Inside a large mapping (a 2 MiB page split into small ones under HRT).
        size_t len = 8 << 20;
        char *p = map(len, PROT_READ | PROT_WRITE);
        memset(p, 5, len);
        if (mprotect(p + (3 << 20), page, PROT_NONE)) perror("mprotect");
        printf("around the hole: %d %d\n", p[(3 << 20) - 1], p[(3 << 20) + page]);
        fflush(stdout);
        say("reading the PROT_NONE page");
        printf("%d\n", ((volatile char *)p)[(3 << 20) + 5]);
        say("survived (wrong)");
    } else if (!strcmp(c, "restore")) {
        // PROT_NONE and back keeps the contents; small and large ranges, and whole 2 MiB pages.
        size_t sizes[] = {(size_t)page, 3 * (size_t)page, 2 << 20, 6 << 20};
        for (int i = 0; i < 4; i++) {
            size_t len = sizes[i];
            char *p = map(len + (2 << 20), PROT_READ | PROT_WRITE);
            for (size_t k = 0; k < len + (2 << 20); k += 512) p[k] = (char)(k / 512 + i);
            int a = mprotect(p, len, PROT_NONE);
            int b = mprotect(p, len, PROT_READ);
            int c2 = mprotect(p, len, PROT_READ | PROT_WRITE);
            size_t bad = 0;
            for (size_t k = 0; k < len + (2 << 20); k += 512) bad += p[k] != (char)(k / 512 + i);
            p[len - 1] = 1;
            printf("restore %zu bytes: mprotect %d %d %d, %zu bytes differ\n", len, a, b, c2, bad);
            munmap(p, len + (2 << 20));
        }
        // A fresh mapping at memory that was PROT_NONE when unmapped is usable.
        for (int i = 0; i < 20; i++) {
            char *p = map(1 << 20, PROT_NONE);
            munmap(p, 1 << 20);
            char *q = map(1 << 20, PROT_READ | PROT_WRITE);
            q[0] = q[(1 << 20) - 1] = 1;
            munmap(q, 1 << 20);
        }
        say("fresh mappings after PROT_NONE ones: ok");
        // The kernel refuses to write into read-only memory and to read PROT_NONE memory.
        char *r = map(2 * page, PROT_READ);
        errno = 0;
        long got = getrandom(r, 16, 0);
        printf("getrandom into a read-only page: %ld errno %s\n", got, strerror(errno));
        char *n = map(page, PROT_NONE);
        errno = 0;
        int ok = sched_getaffinity(0, 128, (cpu_set_t *)n);
        printf("sched_getaffinity into a PROT_NONE page: %d errno %s\n", ok, strerror(errno));
        errno = 0;
        ok = mprotect(n + 1, page, PROT_READ);
        printf("mprotect unaligned: %d errno %s\n", ok, strerror(errno));
    } else if (!strcmp(c, "grow_other_cpu")) {
        // A thread on another CPU reads a read-only page (its TLB may keep that), then the
        // page becomes writable and the thread writes it: that must work (HRT does not flush
        // other CPUs when permissions grow; a stale entry faults once and is retried).
        char *p = map(page, PROT_READ | PROT_WRITE);
        p[0] = 1;
        if (mprotect(p, page, PROT_READ)) perror("mprotect");
        pthread_t t;
        struct grow_args args = {p, 0, 0};
        pthread_create(&t, NULL, grow_reader, &args);
        while (!__atomic_load_n(&args.ready, __ATOMIC_ACQUIRE)) sched_yield();
        if (mprotect(p, page, PROT_READ | PROT_WRITE)) perror("mprotect");
        __atomic_store_n(&args.go, 1, __ATOMIC_RELEASE);
        pthread_join(t, NULL);
        printf("the other thread wrote %d after the page became writable\n", p[0]);
    } else if (!strcmp(c, "exec_readonly")) {
        // Without PROT_EXEC a page does not execute (where the CPU has NX, as here and on Linux).
        unsigned char *p = (unsigned char *)map(page, PROT_READ | PROT_WRITE);
        p[0] = 0xc3; // ret
        if (mprotect(p, page, PROT_READ | PROT_EXEC)) perror("mprotect");
        ((void (*)(void))p)();
        say("executing a PROT_READ|PROT_EXEC page: ok");
        if (mprotect(p, page, PROT_READ)) perror("mprotect");
        say("executing a PROT_READ page");
        ((void (*)(void))p)();
        say("survived (wrong)");
    } else {
        fprintf(stderr, "usage: %s main|thread|write_readonly|read_none|read_mprotect_none|restore|exec_readonly|grow_other_cpu\n", argv[0]);
        return 2;
    }
    return 0;
}
