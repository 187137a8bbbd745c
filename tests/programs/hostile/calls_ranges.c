// Pointers and lengths that run out of the program's mappings, handed to forwarded and local
// calls: Linux copies up to the first unmapped page (a short count) or gives EFAULT. Each case
// builds its own hole (mmap then munmap of the last page) so the layout is the same natively
// and under hrt.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096L
#define PAGES 16

static void report(const char *what, long r) {
    if (r < 0)
        printf("%s: -1 errno %d\n", what, errno);
    else
        printf("%s: %ld\n", what, r);
    fflush(stdout);
}

// PAGES mapped pages followed by an unmapped one.
static char *before_hole(void) {
    char *p = mmap(NULL, (PAGES + 1) * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    if (munmap(p + PAGES * PAGE, PAGE)) {
        perror("munmap");
        exit(1);
    }
    return p;
}

static int pipe_with(size_t n) {
    int fds[2];
    if (pipe(fds)) {
        perror("pipe");
        exit(1);
    }
    char buf[4096];
    memset(buf, 'x', sizeof buf);
    if (write(fds[1], buf, n) != (ssize_t)n)
        exit(1);
    close(fds[1]);
    return fds[0];
}

int main(void) {
    char *p = before_hole();
    int zero = open("/dev/zero", O_RDONLY);
    report("read /dev/zero 64 MiB into 16 mapped pages", read(zero, p, 1L << 26));
    report("read /dev/zero starting in the hole", read(zero, p + PAGES * PAGE, 10));
    report("read pipe of 100 bytes, length 64 MiB", read(pipe_with(100), p, 1L << 26));

    char tmpl[] = "/tmp/hrt-calls-XXXXXX";
    int f = mkstemp(tmpl);
    unlink(tmpl);
    report("write 64 MiB from 16 mapped pages to a file", write(f, p, 1L << 26));
    size_t size_max = SIZE_MAX;
    __asm__("" : "+r"(size_max)); // hides the length from gcc's object-size warnings
    report("write SIZE_MAX", write(f, p, size_max));
    report("write from the hole", write(f, p + PAGES * PAGE, 1));
    report("pwrite64 SIZE_MAX/2", pwrite(f, p, SIZE_MAX / 2, 0));

    struct pollfd *fds = (struct pollfd *)(p + PAGES * PAGE) - 16;
    for (int i = 0; i < 16; i++)
        fds[i] = (struct pollfd){.fd = 0, .events = POLLIN};
    report("poll 20000 fds, 16 before the hole", poll(fds, 20000, 0));
    report("poll 16 fds before the hole", poll(fds, 16, 0) >= 0 ? 0 : -1);

    struct iovec iov[2] = {{p, 10}, {p + PAGES * PAGE, 10}};
    report("readv pipe, second iovec in the hole", readv(pipe_with(100), iov, 2));
    struct iovec *iov_edge = (struct iovec *)(p + PAGES * PAGE) - 1;
    *iov_edge = (struct iovec){p, 10};
    report("readv pipe, iovec array running into the hole", readv(pipe_with(100), iov_edge, 2));
    struct pollfd on_stack[16];
    for (int i = 0; i < 16; i++)
        on_stack[i] = (struct pollfd){.fd = 0, .events = POLLIN};
    nfds_t many = 20000;
    __asm__("" : "+r"(many));
    report("poll 20000 fds in a 16-entry array on the stack", poll(on_stack, many, 0));

    // A small malloc comes from the break's heap, which ends at the break (page-rounded).
    char *small = malloc(100);
    char *heap_end = (char *)(((uintptr_t)sbrk(0) + PAGE - 1) & ~(PAGE - 1));
    long got = read(zero, small, 1L << 26);
    printf("read /dev/zero 64 MiB into a small malloc: stops at the break %d\n", got == heap_end - small);
    report("read /dev/zero just past the break", read(zero, heap_end, 10));
    report("getrandom running past the break", getrandom(heap_end - 10, 100, 0));
    report("clock_gettime just past the break", syscall(SYS_clock_gettime, CLOCK_REALTIME, heap_end));

    // A fixed mapping in the page after the break (natively nothing is mapped there).
    char *fixed = mmap(heap_end + 64 * PAGE, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    report("read /dev/zero into a MAP_FIXED page past the break", read(zero, fixed, 100));
    munmap(fixed, PAGE);

    char *gone = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    strcpy(gone, "hello");
    munmap(gone, PAGE);
    int pfd[2];
    pipe(pfd);
    report("write from just-munmapped memory", write(pfd[1], gone, 5));
    report("read into just-munmapped memory", read(pipe_with(5), gone, 5));
    report("stat into just-munmapped memory", stat("/", (struct stat *)gone));
    report("open a path in just-munmapped memory", open(gone, O_RDONLY));
    report("clock_gettime into just-munmapped memory", syscall(SYS_clock_gettime, CLOCK_REALTIME, gone));
    report("getrandom into just-munmapped memory", getrandom(gone, 16, 0));
    report("getrandom running into the hole", getrandom(p + PAGES * PAGE - 100, 1000, 0));
    // A read-only page ends it as a hole does (hrt said EFAULT for the whole call).
    char *two = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mprotect(two + PAGE, PAGE, PROT_READ);
    report("getrandom running into a read-only page", getrandom(two + PAGE - 10, 100, 0));
    munmap(two, 2 * PAGE);
    report("uname into the hole", syscall(SYS_uname, p + PAGES * PAGE - 100));

    // Each iovec's whole range must lie in the user address space (Linux's access_ok) before
    // anything is copied, even where the total is capped.
    struct iovec huge[4];
    for (int i = 0; i < 4; i++)
        huge[i] = (struct iovec){p, SIZE_MAX >> 1};
    lseek(f, 0, SEEK_END);
    report("readv at a file's end, iovecs of SSIZE_MAX", readv(f, huge, 4));
    for (int i = 0; i < 4; i++)
        huge[i] = (struct iovec){p, PAGE};
    huge[3] = (struct iovec){(char *)(1UL << 47) - 2 * PAGE, 2 * PAGE + 1};
    report("readv a file, an iovec past the user space", readv(f, huge, 4));

    // A write whose buffer runs into a hole: a file takes the bytes before it; a pipe whole
    // pages of the buffer, EFAULT if none; a socket nothing of a short write.
    int pp[2];
    pipe(pp);
    report("write 200 to a pipe, hole after 96", write(pp[1], p + PAGES * PAGE - 96, 200));
    report("write 10000 to a pipe, hole after 5000", write(pp[1], p + PAGES * PAGE - 5000, 10000));
    report("the pipe then holds", read(pp[0], p, 20000));
    int sp[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sp);
    report("write 200 to a stream socket, hole after 96", write(sp[0], p + PAGES * PAGE - 96, 200));
    report("send 5000 on a stream socket, hole after 3000", send(sp[0], p + PAGES * PAGE - 3000, 5000, 0));
    report("the socket then holds", recv(sp[1], p, 20000, MSG_DONTWAIT));
    int dp[2];
    socketpair(AF_UNIX, SOCK_DGRAM, 0, dp);
    report("write 200 to a datagram socket, hole after 96", write(dp[0], p + PAGES * PAGE - 96, 200));
    report("the datagram socket then holds", recv(dp[1], p, 20000, MSG_DONTWAIT));

    // getdents64's count is an int to Linux: 2 GiB and more is EINVAL while an entry is left.
    int dir = open("/", O_RDONLY | O_DIRECTORY);
    report("getdents64 count 2^31", syscall(SYS_getdents64, dir, p, 1UL << 31));
    report("getdents64 count UINT_MAX", syscall(SYS_getdents64, dir, p, 0xffffffffUL));
    report("getdents64 count 2^31 past the user space", syscall(SYS_getdents64, dir, (1UL << 47) - PAGE, 1UL << 31));
    return 0;
}
