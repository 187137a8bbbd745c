/* A thread blocks in read() on a pipe while another unmaps its buffer; then the data comes, and
 * then the program maps fresh memory, anywhere and at the old address. Fresh memory must read
 * zero (Linux fails the read with EFAULT: nothing is mapped there when the data comes; under
 * hrt the monitor wrote the data into the pages the buffer had, which the program's next
 * mapping got back with it). The read's result is not printed: it differs (hrt writes the
 * data into pages the program no longer has, kept out of use until the read has ended). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SIZE (2 << 20)
static int pp[2];
static char *buf;

static void *reader(void *arg) {
    (void)arg;
    if (read(pp[0], buf, 4096) < 0) {
        /* EFAULT natively: nothing to do. */
    }
    return NULL;
}

static int all_zero(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

int main(void) {
    int bad = 0;
    for (int round = 0; round < 8; round++) {
        if (pipe(pp))
            return 1;
        buf = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        buf[0] = 1;
        pthread_t t;
        pthread_create(&t, NULL, reader, NULL);
        usleep(20000 + round * 10000);
        munmap(buf, SIZE);
        char data[4096];
        memset(data, 0xab, sizeof data);
        if (write(pp[1], data, sizeof data) != sizeof data)
            return 2;
        pthread_join(t, NULL);
        char *fresh = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        char *hinted = mmap(buf, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (fresh == MAP_FAILED || hinted == MAP_FAILED || !all_zero(fresh, SIZE) || !all_zero(hinted, SIZE))
            bad++;
        munmap(fresh, SIZE);
        munmap(hinted, SIZE);
        close(pp[0]);
        close(pp[1]);
    }
    printf("fresh memory read zero after a read into unmapped memory: %s\n", bad ? "NO" : "yes");
    return 0;
}
