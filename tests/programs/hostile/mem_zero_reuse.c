// Every byte a program gets from mmap, mremap, brk, MAP_FIXED and madvise(MADV_DONTNEED) must
// read zero, also when the memory was used before (dirty memory given back and handed out
// again), from one thread and from several at once. Prints one line per case.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#define MIB (1ul << 20)
#define MAP_ANON_RW PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS

static size_t nonzero(const unsigned char *p, size_t len) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += p[i] != 0;
    return n;
}

static size_t not_byte(const unsigned char *p, size_t len, unsigned char b) {
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += p[i] != b;
    return n;
}

static void report(const char *name, size_t bad) {
    printf("%s: %s\n", name, bad ? "NOT ZERO" : "ok");
    if (bad)
        fprintf(stderr, "%s: %zu bad bytes\n", name, bad);
}

// After memory was recycled (given back to the host and handed out again), what the program
// writes must be what the host reads and the reverse: a pipe (forwarded to the host under HRT)
// carries 4 MiB out of recycled memory and back into other recycled memory.
static size_t host_round_trip(unsigned char *out, unsigned char *in, size_t len) {
    int fd[2];
    if (pipe(fd)) {
        perror("pipe");
        exit(1);
    }
    for (size_t i = 0; i < len; i++)
        out[i] = (unsigned char)(i * 7 + 1);
    size_t bad = 0;
    for (size_t off = 0; off < len; off += 32768) {
        if (write(fd[1], out + off, 32768) != 32768 || read(fd[0], in + off, 32768) != 32768) {
            perror("pipe round trip");
            exit(1);
        }
    }
    for (size_t i = 0; i < len; i++)
        bad += in[i] != (unsigned char)(i * 7 + 1);
    close(fd[0]);
    close(fd[1]);
    return bad;
}

static unsigned char *map(size_t len) {
    unsigned char *p = mmap(NULL, len, MAP_ANON_RW, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    return p;
}

// Maps, checks zero, dirties and unmaps `rounds` mappings of varied sizes; returns bad bytes.
static size_t reuse_rounds(unsigned seed, int rounds) {
    size_t bad = 0;
    for (int i = 0; i < rounds; i++) {
        seed = seed * 1103515245 + 12345;
        size_t len = 4096 + (seed >> 4) % (5 * MIB);
        unsigned char *p = map(len);
        bad += nonzero(p, len);
        memset(p, 0xa5, len);
        if (i % 2)
            munmap(p, len);
        else { // give back in two pieces, the upper one first
            size_t half = (len / 2) & ~4095ul;
            munmap(p + half, len - half);
            munmap(p, half);
        }
    }
    return bad;
}

static void *reuse_thread(void *arg) {
    return (void *)(uintptr_t)reuse_rounds((unsigned)(uintptr_t)arg, 60);
}

static volatile int forwarding_done;
static void *forwarder(void *arg) {
    (void)arg;
    int fd = open("/dev/null", O_WRONLY);
    struct stat st;
    while (!forwarding_done)
        fstat(fd, &st);
    close(fd);
    return NULL;
}

/* Rounds of: fill 5 MiB and a bit with a pattern, give back a range that starts and ends
 * inside pages and huge pages, check it reads zero and the rest kept its bytes. */
static size_t dontneed_while_forwarding(void) {
    pthread_t t;
    pthread_create(&t, NULL, forwarder, NULL);
    size_t len = 5 * MIB + 5 * 4096, bad = 0;
    unsigned char *p = map(len);
    for (int round = 0; round < 40; round++) {
        size_t from = 4096 * (1 + round % 7), to = len - 4096 * (1 + round % 3);
        memset(p, 0x60 + round, len);
        madvise(p + from, to - from, MADV_DONTNEED);
        bad += nonzero(p + from, to - from);
        bad += not_byte(p, from, 0x60 + round) + not_byte(p + to, len - to, 0x60 + round);
    }
    munmap(p, len);
    forwarding_done = 1;
    pthread_join(t, NULL);
    return bad;
}

int main(void) {
    // Fresh and reused anonymous mappings.
    unsigned char *p = map(64 * MIB);
    report("mmap-fresh-64MiB", nonzero(p, 64 * MIB));
    memset(p, 0xff, 64 * MIB);
    munmap(p, 64 * MIB);
    p = map(64 * MIB);
    report("mmap-after-munmap-64MiB", nonzero(p, 64 * MIB));
    memset(p, 0xff, 64 * MIB);
    munmap(p, 64 * MIB);
    report("mmap-munmap-reuse-rounds", reuse_rounds(1, 120));
    p = map(4 * MIB);
    unsigned char *in = map(4 * MIB);
    report("host-sees-recycled-memory", host_round_trip(p, in, 4 * MIB));
    munmap(p, 4 * MIB);
    munmap(in, 4 * MIB);

    // mremap growth, moving: old contents kept, the new part zero.
    p = map(MIB);
    memset(p, 0x5a, MIB);
    unsigned char *q = mremap(p, MIB, 48 * MIB, MREMAP_MAYMOVE);
    if (q == MAP_FAILED) {
        perror("mremap");
        return 1;
    }
    report("mremap-grow-keeps-old", not_byte(q, MIB, 0x5a));
    report("mremap-grow-new-part", nonzero(q + MIB, 47 * MIB));
    memset(q, 0x77, 48 * MIB);
    // Shrink, then grow again in place over the dirty part just given back.
    if (mremap(q, 48 * MIB, 8 * MIB, 0) != q) {
        perror("mremap shrink");
        return 1;
    }
    unsigned char *r = mremap(q, 8 * MIB, 48 * MIB, MREMAP_MAYMOVE);
    report("mremap-shrink-regrow-new-part", r == MAP_FAILED ? 1 : nonzero(r + 8 * MIB, 40 * MIB));
    munmap(r, 48 * MIB);

    // MAP_FIXED over an old mapping (its middle), and over a range partly unmapped.
    p = map(16 * MIB);
    memset(p, 0x11, 16 * MIB);
    q = mmap(p + 4 * MIB, 8 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    report("map-fixed-over-old", q == MAP_FAILED ? 1 : nonzero(q, 8 * MIB));
    report("map-fixed-keeps-around", not_byte(p, 4 * MIB, 0x11) + not_byte(p + 12 * MIB, 4 * MIB, 0x11));
    memset(p, 0x22, 16 * MIB);
    munmap(p + 8 * MIB, 4 * MIB);
    q = mmap(p + 6 * MIB, 8 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    report("map-fixed-over-hole", q == MAP_FAILED ? 1 : nonzero(q, 8 * MIB));
    munmap(p, 16 * MIB);

    // madvise(MADV_DONTNEED): the range reads zero, the rest is kept.
    p = map(8 * MIB + 3 * 4096);
    memset(p, 0x33, 8 * MIB + 3 * 4096);
    madvise(p + 4096, 8 * MIB, MADV_DONTNEED);
    report("madvise-dontneed-range", nonzero(p + 4096, 8 * MIB));
    report("madvise-dontneed-keeps-around", not_byte(p, 4096, 0x33) + not_byte(p + 4096 + 8 * MIB, 2 * 4096, 0x33));
    munmap(p, 8 * MIB + 3 * 4096);

    // The same while another thread keeps the monitor's channel busy with forwarded calls:
    // the kernel then has its service thread clear the range, not a VM exit.
    report("madvise-dontneed-while-forwarding", dontneed_while_forwarding());

    // brk: grow, dirty, shrink, grow again.
    p = sbrk(0);
    if (sbrk(24 * MIB) == (void *)-1) {
        perror("sbrk");
        return 1;
    }
    report("brk-fresh", nonzero(p, 24 * MIB));
    memset(p, 0x44, 24 * MIB);
    sbrk(-(long)(24 * MIB) + 4096 + 100);
    sbrk(24 * MIB - 4096 - 100);
    // Linux clears whole pages above the break only: from the next page boundary.
    report("brk-shrink-regrow", nonzero(p + 2 * 4096, 24 * MIB - 2 * 4096));
    report("brk-shrink-keeps-below", not_byte(p, 4096 + 100, 0x44));
    sbrk(-(long)(24 * MIB));

    // Several threads recycling memory at once.
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, reuse_thread, (void *)(i + 7));
    size_t bad = 0;
    for (int i = 0; i < 4; i++) {
        void *ret;
        pthread_join(t[i], &ret);
        bad += (uintptr_t)ret;
    }
    report("threads-mmap-munmap-reuse", bad);

    // calloc after malloc/free of large and small blocks (mmap and brk underneath).
    bad = 0;
    for (int i = 0; i < 300; i++) {
        size_t len = (i % 3 == 0) ? 3 * MIB + i * 4096 : 4096 * (1 + i % 40);
        unsigned char *m = malloc(len);
        memset(m, 0xee, len);
        free(m);
        unsigned char *c = calloc(len, 1);
        bad += nonzero(c, len);
        memset(c, 0xdd, len);
        if (i % 2)
            free(c);
    }
    report("calloc-after-free", bad);
    return 0;
}
