// madvise as Linux answers it, on each kind of memory: private anonymous, private file
// (writable and read-only), shared anonymous, shared file (writable and read-only), PROT_NONE,
// a range with an unmapped page, an empty range and an unaligned address, for every advice
// value Linux 6.x knows and a few it does not (errno per case). Then what the advice does:
// DONTNEED makes a private file mapping read its file again (also after other descriptors
// were closed, and read-only pages), anonymous memory zero; REMOVE punches a hole in a memfd
// (zero through the mapping and the file); WIPEONFORK zeroes the child's copy (a grandchild's
// too), KEEPONFORK undoes it; DONTFORK leaves the range unmapped in the child (SIGSEGV),
// DOFORK undoes it; DONTNEED past the end of a file keeps SIGBUS there; POPULATE_READ past it
// is EFAULT. The forks run twice: alone, and with another thread running (on the other vCPU
// under `hrt run --cpus 2`), whose CPU a forked child never starts. Left out: MADV_HWPOISON and MADV_SOFT_OFFLINE (as root they would poison a
// page natively), MADV_COLLAPSE and MADV_GUARD_INSTALL (HRT refuses them with EINVAL).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096

static const char *err(int r) { return r ? strerrorname_np(errno) : "0"; }

static sigjmp_buf back;
static void on_fault(int sig) { siglongjmp(back, sig); }

// What touching p gives: the byte, or the signal's name.
static void touch(const char *what, volatile char *p) {
    int sig = sigsetjmp(back, 1);
    if (sig == 0) {
        char c = *p;
        printf("%s: %d\n", what, c);
    } else {
        printf("%s: %s\n", what, sigabbrev_np(sig));
    }
}

static int fd;

static void matrix(void) {
    const int advice[] = {0, 1, 2, 3, 4, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 26, 99, 103, 104, 999};
    char page[2 * PG];
    memset(page, 'A', sizeof page);
    for (unsigned i = 0; i < sizeof advice / sizeof *advice; i++) {
        int a = advice[i];
        pwrite(fd, page, sizeof page, 0);
        char *pa = mmap(0, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        char *pf = mmap(0, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        char *pfr = mmap(0, 2 * PG, PROT_READ, MAP_PRIVATE, fd, 0);
        char *sa = mmap(0, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        char *sf = mmap(0, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        char *sfr = mmap(0, 2 * PG, PROT_READ, MAP_SHARED, fd, 0);
        char *pn = mmap(0, 2 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        char *un = mmap(0, 2 * PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        munmap(un + PG, PG);
        pa[0] = 1, pf[0] = 1, sa[0] = 1;
        printf("advice %3d: private-anon %s", a, err(madvise(pa, 2 * PG, a)));
        printf(" private-file %s", err(madvise(pf, 2 * PG, a)));
        printf(" private-file-ro %s", err(madvise(pfr, 2 * PG, a)));
        printf(" shared-anon %s", err(madvise(sa, 2 * PG, a)));
        printf(" shared-file %s", err(madvise(sf, 2 * PG, a)));
        printf(" shared-file-ro %s", err(madvise(sfr, 2 * PG, a)));
        printf(" prot-none %s", err(madvise(pn, 2 * PG, a)));
        printf(" part-unmapped %s", err(madvise(un, 2 * PG, a)));
        printf(" empty %s", err(madvise(un + PG, 0, a)));
        printf(" unaligned %s\n", err(madvise(pa + 1, PG, a)));
        munmap(pa, 2 * PG), munmap(pf, 2 * PG), munmap(pfr, 2 * PG), munmap(sa, 2 * PG);
        munmap(sf, 2 * PG), munmap(sfr, 2 * PG), munmap(pn, 2 * PG), munmap(un, PG);
    }
}

static void dontneed(void) {
    char page[PG];
    memset(page, 'A', PG);
    pwrite(fd, page, PG, 0);
    pwrite(fd, "B", 1, PG); // the second page holds the end of the file at 1 byte
    ftruncate(fd, PG + 1);
    char *pf = mmap(0, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    char *pfr = mmap(0, PG, PROT_READ, MAP_PRIVATE, fd, 0);
    char *pa = mmap(0, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pf[0] = 'Z', pf[PG] = 'Y', pf[PG + 100] = 'X', pa[0] = 'W';
    pwrite(fd, "C", 1, 1); // the file changes under the private copy
    const char *r;
    int other = open("/dev/null", O_RDONLY);
    close(other); // another descriptor closed: the mapping's file is still in reach
    r = err(madvise(pf, 3 * PG, MADV_DONTNEED));
    printf("dontneed private file: %s", r);
    printf(" bytes %c %c %c %c tail %d\n", pf[0], pf[1], pf[2], pf[PG], pf[PG + 100]);
    touch("dontneed private file, past the end", pf + 2 * PG);
    // (Read once the call returned: the order of printf's arguments is unspecified.)
    r = err(madvise(pfr, PG, MADV_DONTNEED));
    printf("dontneed read-only private file: %s byte %c\n", r, pfr[1]);
    r = err(madvise(pa, PG, MADV_DONTNEED));
    printf("dontneed private anon: %s byte %d\n", r, pa[0]);
    errno = 0;
    printf("populate_read past the end: %s\n", err(madvise(pf + 2 * PG, PG, MADV_POPULATE_READ)));
    printf("populate_write inside: %s\n", err(madvise(pf, PG, MADV_POPULATE_WRITE)));
    printf("populate_write read-only: %s\n", err(madvise(pfr, PG, MADV_POPULATE_WRITE)));
    // Memory without PROT_READ: Linux's permission check refuses to populate it for reading.
    int prots[] = {PROT_WRITE, PROT_EXEC, PROT_WRITE | PROT_EXEC, PROT_READ | PROT_WRITE, PROT_NONE};
    const char *names[] = {"write-only", "exec-only", "write+exec", "read+write", "none"};
    for (int i = 0; i < 5; i++) {
        char *m = mmap(0, 2 * PG, prots[i], MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        const char *rd = err(madvise(m, 2 * PG, MADV_POPULATE_READ));
        printf("populate %s: read %s, write %s\n", names[i], rd, err(madvise(m, 2 * PG, MADV_POPULATE_WRITE)));
        munmap(m, 2 * PG);
    }
    munmap(pf, 3 * PG), munmap(pfr, PG), munmap(pa, PG);
}

static void remove_hole(void) {
    int mf = memfd_create("madvise-kinds", 0);
    ftruncate(mf, 2 * PG);
    char *s = mmap(0, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, mf, 0);
    s[0] = 'R', s[PG] = 'S';
    int r = madvise(s, PG, MADV_REMOVE);
    char b[2] = {1, 1};
    pread(mf, &b[0], 1, 0);
    pread(mf, &b[1], 1, PG);
    printf("remove memfd: %s file %d %c map %d %c\n", err(r), b[0], b[1], s[0], s[PG]);
    char *sa = mmap(0, PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    sa[0] = 'T';
    r = madvise(sa, PG, MADV_REMOVE);
    printf("remove shared anon: %s byte %d\n", err(r), sa[0]);
    munmap(s, 2 * PG), munmap(sa, PG), close(mf);
}

static void forks(void) {
    char *w = mmap(0, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *d = mmap(0, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (int i = 0; i < 3; i++)
        w[i * PG] = 'w', d[i * PG] = 'd';
    madvise(w, 2 * PG, MADV_WIPEONFORK);
    madvise(w + PG, PG, MADV_KEEPONFORK);
    madvise(d, 2 * PG, MADV_DONTFORK);
    madvise(d + PG, PG, MADV_DOFORK);
    pid_t c = fork();
    if (c == 0) {
        printf("child: wiped %d kept %d %d\n", w[0], w[PG], w[2 * PG]);
        w[0] = 'x';
        pid_t g = fork();
        if (g == 0) {
            printf("grandchild: wiped %d\n", w[0]);
            _exit(0);
        }
        waitpid(g, 0, 0);
        touch("child: not forked", d);
        touch("child: forked again", d + PG);
        touch("child: never advised", d + 2 * PG);
        // The range is free in the child: a new mapping may take it.
        char *n = mmap(d, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        printf("child: mapping there again: %s, reads %d\n", n == d ? "same address" : "elsewhere", n[0]);
        fflush(stdout);
        _exit(0);
    }
    waitpid(c, 0, 0);
    printf("parent: %c %c %c\n", w[0], d[0], d[PG]);
    // Unmapped and mapped again: the advice is gone with the old mapping.
    munmap(w, 3 * PG);
    char *again = mmap(w, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    again[0] = 'a';
    c = fork();
    if (c == 0) {
        printf("child: remapped %c\n", again[0]);
        _exit(0);
    }
    waitpid(c, 0, 0);
    // mremap moves the advice with the memory.
    char *m = mmap(0, PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    m[0] = 'm';
    madvise(m, PG, MADV_WIPEONFORK);
    char *moved = mremap(m, PG, 64 * PG, MREMAP_MAYMOVE);
    moved[PG] = 'n';
    c = fork();
    if (c == 0) {
        printf("child: moved %d grown %d\n", moved[0], moved[PG]);
        _exit(0);
    }
    waitpid(c, 0, 0);
}

static atomic_int spinning, spin_stop;

static void *spinner(void *arg) {
    (void)arg;
    atomic_store(&spinning, 1);
    while (!atomic_load(&spin_stop))
        ;
    return 0;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct sigaction sa = {.sa_handler = on_fault, .sa_flags = SA_NODEFER};
    sigaction(SIGSEGV, &sa, 0);
    sigaction(SIGBUS, &sa, 0);
    char path[] = "/tmp/hrt-madvise-XXXXXX";
    fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    unlink(path);
    matrix();
    dontneed();
    remove_hole();
    forks();
    // A child's DONTFORK ranges are unmapped before its first thread runs: that must not wait
    // for the parent's other CPUs, which the child has not started.
    pthread_t t;
    pthread_create(&t, 0, spinner, 0);
    while (!atomic_load(&spinning))
        sched_yield();
    forks();
    atomic_store(&spin_stop, 1);
    pthread_join(t, 0);
    printf("madvise kinds: done\n");
    return 0;
}
