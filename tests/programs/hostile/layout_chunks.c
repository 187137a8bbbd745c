/* Allocates most of the program's memory in 256 MiB chunks and, at points spread over every
 * chunk (every 16 MiB, its last bytes, and any page where a PC's IOAPIC or local APIC lives),
 * has the kernel write into it: clock_gettime and getrandom through the system call (not the
 * vDSO), futex values (FUTEX_WAKE_OP, then a FUTEX_WAIT that must see them) and a forwarded
 * read from a pipe. Every result is checked. Usage: layout_chunks N (chunks to allocate).
 * stdout is the same natively and under hrt; stderr says where the chunks were. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (256UL << 20)
#define STRIDE (16UL << 20)
#define POINT 256 /* bytes each check uses */

static int pipefd[2];
static unsigned long failures;

static void fail(const char *what, unsigned long chunk, uintptr_t at) {
    if (failures++ < 20) {
        printf("FAIL %s in chunk %lu\n", what, chunk);
        fprintf(stderr, "FAIL %s at %#lx\n", what, (unsigned long)at);
    }
}

static void check_point(unsigned char *p, unsigned long chunk) {
    uintptr_t at = (uintptr_t)p;
    /* clock_gettime through the kernel */
    struct timespec before, after, *ts = (struct timespec *)p;
    memset(p, 0xff, sizeof *ts);
    clock_gettime(CLOCK_REALTIME, &before);
    long r = syscall(SYS_clock_gettime, CLOCK_REALTIME, ts);
    clock_gettime(CLOCK_REALTIME, &after);
    if (r != 0 || ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000 || ts->tv_sec < before.tv_sec ||
        ts->tv_sec > after.tv_sec)
        fail("clock_gettime", chunk, at);
    /* getrandom: 32 bytes, not left as the 0xaa filler */
    unsigned char *rnd = p + 16;
    memset(rnd, 0xaa, 32);
    if (syscall(SYS_getrandom, rnd, 32, 0) != 32)
        fail("getrandom result", chunk, at);
    int same = 0;
    for (int i = 0; i < 32; i++) same += rnd[i] == 0xaa;
    if (same == 32) fail("getrandom bytes", chunk, at);
    /* futex: WAKE_OP adds 5 to *f2 (7 -> 12); a WAIT for 12 then times out, one for 7 does not wait */
    int *f1 = (int *)(p + 48), *f2 = (int *)(p + 52);
    *f1 = 0;
    *f2 = 7;
    r = syscall(SYS_futex, f1, FUTEX_WAKE_OP | FUTEX_PRIVATE_FLAG, 1, 1, f2,
                FUTEX_OP(FUTEX_OP_ADD, 5, FUTEX_OP_CMP_EQ, 0));
    if (r != 0 || __atomic_load_n(f2, __ATOMIC_SEQ_CST) != 12) fail("futex wake_op", chunk, at);
    struct timespec tiny = {0, 1000};
    r = syscall(SYS_futex, f2, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 7, &tiny, 0, 0);
    if (r != -1 || errno != EAGAIN) fail("futex wait (value changed)", chunk, at);
    r = syscall(SYS_futex, f2, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 12, &tiny, 0, 0);
    if (r != -1 || errno != ETIMEDOUT) fail("futex wait (value same)", chunk, at);
    /* a forwarded read from a pipe */
    unsigned char msg[128], *dst = p + 64;
    for (int i = 0; i < 128; i++) msg[i] = (unsigned char)(i * 7 + chunk);
    memset(dst, 0, sizeof msg);
    if (write(pipefd[1], msg, sizeof msg) != sizeof msg || read(pipefd[0], dst, sizeof msg) != sizeof msg ||
        memcmp(dst, msg, sizeof msg) != 0)
        fail("read", chunk, at);
}

int main(int argc, char **argv) {
    unsigned long want = argc > 1 ? strtoul(argv[1], 0, 0) : 8;
    if (pipe(pipefd) != 0) return 2;
    unsigned char **chunks = calloc(want, sizeof *chunks);
    unsigned long got = 0, above_4g = 0, in_hole = 0;
    uintptr_t lowest = UINTPTR_MAX, highest = 0;
    for (; got < want; got++) {
        void *c = mmap(0, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (c == MAP_FAILED) {
            printf("mmap of chunk %lu failed: %s\n", got, strerror(errno));
            break;
        }
        chunks[got] = c;
        uintptr_t s = (uintptr_t)c, e = s + CHUNK;
        lowest = s < lowest ? s : lowest;
        highest = e > highest ? e : highest;
        above_4g += s >= (1UL << 32);
        in_hole += s < (1UL << 32) && e > 0xc0000000UL;
    }
    printf("allocated %lu chunks of 256 MiB\n", got);
    fprintf(stderr, "layout: %lu chunks in [%#lx, %#lx), %lu above 4 GiB, %lu in 3-4 GiB\n", got,
            (unsigned long)lowest, (unsigned long)highest, above_4g, in_hole);
    for (unsigned long i = 0; i < got; i++) {
        unsigned char *c = chunks[i];
        uintptr_t s = (uintptr_t)c;
        for (unsigned long off = 0; off < CHUNK; off += STRIDE) check_point(c + off, i);
        check_point(c + CHUNK - POINT, i);
        /* The pages where the IOAPIC and the local APIC sit on a PC, if this chunk holds them. */
        const uintptr_t devices[] = {0xfec00000UL, 0xfee00000UL};
        for (int d = 0; d < 2; d++)
            if (devices[d] >= s && devices[d] + 4096 <= s + CHUNK)
                for (unsigned long off = 0; off < 4096; off += POINT) check_point((unsigned char *)devices[d] + off, i);
    }
    printf("checked %lu chunks: %lu failures\n", got, failures);
    return failures != 0;
}
