/* A MAP_PRIVATE file mapping longer than its file: the page holding the end of the file reads
 * the file and then zeros, a page wholly past the end raises SIGBUS (BUS_ADRERR, the address)
 * on a read or a write (SIGSEGV where the protection forbids the access), a call with a buffer
 * there fails with EFAULT, and once the file grows over the page (pwrite and ftruncate through
 * the descriptor) the page holds the file's new bytes. munmap, mprotect and mremap (shrinking,
 * growing, moving) keep working, as does a page touched right after mmap and a MAP_FIXED
 * mapping over memory in use; a MAP_SHARED mapping does the same; a forked child without a
 * handler dies of SIGBUS. One line per case, the same natively and under hrt.
 * Usage: mmap_past_eof        the cases above
 *        mmap_past_eof die    touches a page past the end without a handler (status 135) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "touch_fault.h"

#define PAGE 4096
#define SIZE 5000

/* Touches `p` (a read, or a write of 7) and says what happened. */
static void touch(const char *what, volatile char *p, int write) {
    struct touched t = touch_at(p, write, 7);
    if (t.sig)
        printf("%s: signal %d code %d, address %s\n", what, t.sig, t.code, t.addr == (void *)p ? "right" : "wrong");
    else
        printf("%s: no signal, %s %d\n", what, write ? "wrote" : "read", write ? 7 : t.value);
}

/* A new unlinked file of SIZE bytes: byte i is 'a' + i % 26. */
static int new_file(void) {
    char path[] = "/tmp/hrt-past-eof-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        exit(1);
    unlink(path);
    char buf[SIZE];
    for (int i = 0; i < SIZE; i++)
        buf[i] = 'a' + i % 26;
    if (write(fd, buf, SIZE) != SIZE)
        exit(1);
    return fd;
}

static char *map(int fd, size_t len, int flags) {
    char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, 0);
    if (m == MAP_FAILED)
        exit(2);
    return m;
}

/* The file grows to three pages, with "grown!" at offset 8192 + 100. */
static void grow(int fd) {
    if (pwrite(fd, "grown!", 6, 2 * PAGE + 100) != 6 || ftruncate(fd, 3 * PAGE) != 0)
        exit(3);
}

static void private_cases(void) {
    int fd = new_file();
    char *m = map(fd, 3 * PAGE, MAP_PRIVATE);
    printf("last byte of the file: %c\n", m[SIZE - 1]);
    int nonzero = 0;
    for (int i = SIZE; i < 2 * PAGE; i++)
        nonzero += m[i] != 0;
    printf("rest of its page: %d nonzero bytes\n", nonzero);
    touch("write the tail of the last page", m + SIZE + 1, 1);
    touch("read past the end", m + 2 * PAGE + 5, 0);
    touch("write past the end", m + 2 * PAGE + 200, 1);
    mprotect(m, 3 * PAGE, PROT_READ);
    touch("read past the end after mprotect", m + 2 * PAGE, 0);
    touch("write past the end, read-only", m + 2 * PAGE + 8, 1);
    mprotect(m + 2 * PAGE, PAGE, PROT_NONE);
    touch("read past the end, PROT_NONE", m + 2 * PAGE + 8, 0);
    mprotect(m, 3 * PAGE, PROT_READ | PROT_WRITE);
    touch("write past the end after mprotect", m + 2 * PAGE + 9, 1);
    errno = 0;
    ssize_t n = pread(fd, m + 2 * PAGE, 10, 0);
    printf("pread into a page past the end: %zd errno %d\n", n, n < 0 ? errno : 0);
    grow(fd);
    touch("read the grown page", m + 2 * PAGE + 5, 0);
    printf("the grown page holds: %.6s\n", m + 2 * PAGE + 100);
    touch("write the grown page", m + 2 * PAGE + 200, 1);
    printf("first byte still: %c\n", m[0]);
    printf("munmap: %d\n", munmap(m, 3 * PAGE));
    close(fd);

    /* mremap: shrunk, the page past the end is gone (SIGSEGV); grown (in place or moved), the
     * pages past the end still raise SIGBUS and the file's bytes move with the mapping. */
    fd = new_file();
    m = map(fd, 3 * PAGE, MAP_PRIVATE);
    char *r = mremap(m, 3 * PAGE, 2 * PAGE, 0);
    printf("mremap shrinking: %s\n", r == m ? "same place" : "failed");
    touch("read the page shrunk away", m + 2 * PAGE + 5, 0);
    r = mremap(m, 2 * PAGE, 3 * PAGE, MREMAP_MAYMOVE);
    printf("mremap growing: %s\n", r == MAP_FAILED ? "failed" : "ok");
    touch("read the regrown page past the end", r + 2 * PAGE + 5, 0);
    munmap(r, 3 * PAGE);
    m = map(fd, 3 * PAGE, MAP_PRIVATE);
    /* Something right after the mapping, so that growing it may have to move it (if the
     * place is taken already, by something of ld.so's say, that is the neighbour: only our
     * own neighbour is unmapped below). */
    char *next = mmap(m + 3 * PAGE, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    r = mremap(m, 3 * PAGE, 4 * PAGE, MREMAP_MAYMOVE);
    printf("mremap growing past a neighbour: %s\n", r == MAP_FAILED ? "failed" : "ok");
    printf("moved bytes: %c %c\n", r[0], r[SIZE - 1]);
    touch("read past the end after the move", r + 2 * PAGE + 5, 0);
    touch("write the grown part after the move", r + 3 * PAGE + 5, 1);
    munmap(r, 4 * PAGE);
    if (next != MAP_FAILED)
        munmap(next, PAGE);
    close(fd);
}

/* A page past the end touched right after mmap, before any other call (HRT asks the host
 * which file it is only then), and a MAP_FIXED mapping over memory in use. */
static void early_and_fixed_cases(void) {
    int fd = new_file();
    char *m = map(fd, 3 * PAGE, MAP_PRIVATE);
    touch("read past the end at once", m + 2 * PAGE + 5, 0);
    printf("munmap: %d\n", munmap(m, 3 * PAGE));
    char *a = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED)
        exit(2);
    memset(a, 1, 4 * PAGE);
    m = mmap(a, 3 * PAGE, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
    printf("fixed: %s, last byte of the file %c\n", m == a ? "in place" : "failed", m[SIZE - 1]);
    touch("fixed: read past the end", m + 2 * PAGE + 5, 0);
    touch("fixed: the page after the mapping", m + 3 * PAGE + 5, 0);
    munmap(a, 4 * PAGE);
    close(fd);
}

static void shared_cases(void) {
    int fd = new_file();
    char *m = map(fd, 3 * PAGE, MAP_SHARED);
    printf("shared: last byte of the file: %c\n", m[SIZE - 1]);
    touch("shared: read past the end", m + 2 * PAGE + 5, 0);
    touch("shared: write past the end", m + 2 * PAGE + 200, 1);
    grow(fd);
    touch("shared: read the grown page", m + 2 * PAGE + 5, 0);
    printf("shared: the grown page holds: %.6s\n", m + 2 * PAGE + 100);
    munmap(m, 3 * PAGE);
    close(fd);
}

/* A child touching a page past the end without a handler dies of SIGBUS. */
static void child_dies(void) {
    int fd = new_file();
    char *m = map(fd, 3 * PAGE, MAP_PRIVATE);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGBUS, SIG_DFL);
        volatile char *p = m + 2 * PAGE;
        *p = 1;
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    if (WIFSIGNALED(status))
        printf("child killed by signal %d\n", WTERMSIG(status));
    else
        printf("child exited with %d\n", WEXITSTATUS(status));
    close(fd);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc > 1 && strcmp(argv[1], "die") == 0) {
        int fd = new_file();
        char *m = map(fd, 3 * PAGE, MAP_PRIVATE);
        printf("touching a page past the end\n");
        volatile char *p = m + 2 * PAGE + 1;
        return *p;
    }
    catch_touch_faults();
    private_cases();
    early_and_fixed_cases();
    shared_cases();
    child_dies();
    return 0;
}
