/* getrandom and AT_RANDOM as a program relies on them: every size returns its length, no two
 * requests give the same bytes, 1 MiB of them looks uniform (bits and byte values balanced, no
 * 16-byte block repeated), a forked child and its parent, two children, and four threads drawing
 * at once never get the same bytes, and the flags are checked as Linux checks them. stdout is
 * the same natively and under hrt; stderr ends with a fingerprint of this run's first bytes,
 * which must differ from run to run. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef GRND_INSECURE
#define GRND_INSECURE 4
#endif

static int failures;

static void check(int ok, const char *what) {
    if (!ok) {
        failures++;
        printf("FAIL %s\n", what);
    }
}

static void draw(void *buf, size_t len) {
    unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n <= 0) {
            printf("FAIL getrandom(%zu): %zd errno %d\n", len, n, errno);
            exit(1);
        }
        p += n;
        len -= (size_t)n;
    }
}

static int cmp16(const void *a, const void *b) { return memcmp(a, b, 16); }

static void sizes(void) {
    static const size_t lens[] = {1, 7, 8, 16, 31, 32, 33, 63, 64, 65, 255, 256, 257, 4096, 65537};
    static unsigned char a[65537], b[65537];
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        size_t len = lens[i];
        char what[64];
        snprintf(what, sizeof what, "getrandom(%zu) returns %zu", len, len);
        check(getrandom(a, len, 0) == (ssize_t)len, what);
        check(getrandom(b, len, 0) == (ssize_t)len, what);
        if (len >= 8) {
            snprintf(what, sizeof what, "two requests of %zu bytes differ", len);
            check(memcmp(a, b, len) != 0, what);
        }
    }
    printf("sizes 1 to 65537: each returns its length, and two requests differ\n");
}

static void uniform(void) {
    enum { LEN = 1 << 20 };
    unsigned char *buf = malloc(LEN);
    draw(buf, LEN);
    long ones = 0, counts[256] = {0};
    for (long i = 0; i < LEN; i++) {
        ones += __builtin_popcount(buf[i]);
        counts[buf[i]]++;
    }
    /* 8 Mi bits: one standard deviation is 1448 bits; 1 % is 58 of them. */
    check(ones > LEN * 8 * 49L / 100 && ones < LEN * 8 * 51L / 100, "half the bits of 1 MiB are set");
    /* Each value expected 4096 times, standard deviation 64. */
    int skewed = 0;
    for (int v = 0; v < 256; v++)
        skewed += counts[v] < 3500 || counts[v] > 4700;
    check(skewed == 0, "every byte value appears 3500-4700 times in 1 MiB");
    qsort(buf, LEN / 16, 16, cmp16);
    int repeats = 0;
    for (long i = 1; i < LEN / 16; i++)
        repeats += memcmp(buf + 16 * (i - 1), buf + 16 * i, 16) == 0;
    check(repeats == 0, "no 16-byte block of 1 MiB repeats");
    free(buf);
    printf("1 MiB: bits and byte values balanced, no 16-byte block repeated\n");
}

static void forks(void) {
    unsigned char mine[32], theirs[2][32];
    int fds[2][2];
    for (int c = 0; c < 2; c++) {
        if (pipe(fds[c]) != 0) {
            perror("pipe");
            exit(1);
        }
        pid_t pid = fork();
        if (pid == 0) {
            unsigned char got[32];
            draw(got, sizeof got);
            write(fds[c][1], got, sizeof got);
            _exit(0);
        }
        close(fds[c][1]);
    }
    draw(mine, sizeof mine);
    for (int c = 0; c < 2; c++) {
        check(read(fds[c][0], theirs[c], 32) == 32, "a child's bytes arrive");
        wait(NULL);
    }
    check(memcmp(mine, theirs[0], 32) != 0 && memcmp(mine, theirs[1], 32) != 0, "parent and children differ");
    check(memcmp(theirs[0], theirs[1], 32) != 0, "two children differ");
    printf("fork: the parent and two children draw different bytes\n");
}

enum { THREADS = 4, DRAWS = 2000 };
static unsigned char drawn[THREADS * DRAWS][16];

static void *drawer(void *arg) {
    long t = (long)arg;
    for (int i = 0; i < DRAWS; i++)
        draw(drawn[t * DRAWS + i], 16);
    return NULL;
}

static void threads(void) {
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, drawer, (void *)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    qsort(drawn, THREADS * DRAWS, 16, cmp16);
    int repeats = 0;
    for (int i = 1; i < THREADS * DRAWS; i++)
        repeats += memcmp(drawn[i - 1], drawn[i], 16) == 0;
    check(repeats == 0, "threads drawing at once never get the same bytes");
    printf("%d threads, %d draws of 16 bytes each: all different\n", THREADS, DRAWS);
}

static void flags(void) {
    unsigned char b[16];
    check(getrandom(b, 16, GRND_NONBLOCK) == 16, "GRND_NONBLOCK");
    check(getrandom(b, 16, GRND_RANDOM) == 16, "GRND_RANDOM");
    check(getrandom(b, 16, GRND_RANDOM | GRND_NONBLOCK) == 16, "GRND_RANDOM|GRND_NONBLOCK");
    check(getrandom(b, 16, GRND_INSECURE) == 16, "GRND_INSECURE");
    errno = 0;
    check(getrandom(b, 16, GRND_RANDOM | GRND_INSECURE) == -1 && errno == EINVAL, "GRND_RANDOM|GRND_INSECURE: EINVAL");
    errno = 0;
    check(getrandom(b, 16, 8) == -1 && errno == EINVAL, "unknown flag: EINVAL");
    check(getrandom(b, 0, 0) == 0, "0 bytes");
    printf("flags: NONBLOCK, RANDOM, INSECURE accepted; RANDOM|INSECURE and unknown flags EINVAL\n");
}

int main(void) {
    unsigned char first[16];
    draw(first, sizeof first);
    const unsigned char *at_random = (const unsigned char *)getauxval(AT_RANDOM);
    check(at_random != NULL && memcmp(at_random, first, 16) != 0, "AT_RANDOM differs from getrandom's bytes");
    sizes();
    uniform();
    forks();
    threads();
    flags();
    printf("random_bytes: %s\n", failures ? "FAILED" : "all checks passed");
    fprintf(stderr, "fingerprint ");
    for (int i = 0; i < 16; i++)
        fprintf(stderr, "%02x", first[i]);
    fprintf(stderr, " ");
    for (int i = 0; i < 16; i++)
        fprintf(stderr, "%02x", at_random[i]);
    fprintf(stderr, "\n");
    return failures != 0;
}
