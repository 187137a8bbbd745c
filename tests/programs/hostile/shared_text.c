/* Maps its own text segment over itself again, MAP_SHARED from a copy of its executable file
 * (opened for writing with "rw", read-only with "ro"), then runs code there that hrt would
 * rewrite in private memory: system calls made many times (libc's `getppid` and the generic
 * `syscall()`), and threads passing a token by spinning on plain loads, more of them than
 * the test's vCPUs. Kernel code rewrites must never write into shared memory: the bytes would
 * reach the file. Until stop 98 they did: with "rw" the copy on disk changed (the
 * rewritten calls), and with "ro" the run ended in "KVM_RUN failed: Bad address". Prints what
 * it computed and whether the copy still equals the executable; the same on any machine. */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define THREADS 3
#define ROUNDS 200

static volatile int turn;
static long turns[THREADS];

static void *ring(void *arg) {
    long me = (long)arg;
    for (int r = 0; r < ROUNDS; r++) {
        while (turn != me)
            ;
        turns[me]++;
        turn = (int)((me + 1) % THREADS);
    }
    return NULL;
}

__attribute__((noinline)) static long calls(int n) {
    long sum = 0;
    for (int i = 0; i < n; i++)
        sum += syscall(SYS_getppid) - getppid();
    return sum;
}

static char *read_all(const char *path, size_t *len) {
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return NULL;
    size_t cap = 1 << 20, n = 0;
    char *buf = malloc(cap);
    for (ssize_t got; (got = read(fd, buf + n, cap - n)) > 0;) {
        n += (size_t)got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    close(fd);
    *len = n;
    return buf;
}

int main(int argc, char **argv) {
    int writable = argc > 1 && strcmp(argv[1], "rw") == 0;
    size_t len;
    char *self = read_all("/proc/self/exe", &len);
    char path[] = "/tmp/hrt-shared-text-XXXXXX";
    int fd = mkstemp(path);
    if (!self || fd < 0 || write(fd, self, len) != (ssize_t)len)
        return 1;
    close(fd);
    fd = open(path, writable ? O_RDWR : O_RDONLY);
    Elf64_Ehdr *eh = (Elf64_Ehdr *)self;
    Elf64_Phdr *ph = (Elf64_Phdr *)(self + eh->e_phoff);
    int remapped = 0;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
            continue;
        unsigned long va = ph[i].p_vaddr & ~4095UL, off = ph[i].p_offset & ~4095UL;
        unsigned long size = (ph[i].p_vaddr + ph[i].p_filesz - va) & ~4095UL;
        void *p = mmap((void *)va, size, PROT_READ | PROT_EXEC, MAP_SHARED | MAP_FIXED, fd, (off_t)off);
        remapped += p == (void *)va;
    }
    printf("text segments mapped shared from the file: %d\n", remapped);
    printf("system calls, difference: %ld\n", calls(20000));
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, ring, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("turns: %ld %ld %ld\n", turns[0], turns[1], turns[2]);
    size_t now_len;
    char *now = read_all(path, &now_len);
    unlink(path);
    printf("the file is unchanged: %s\n", now && now_len == len && memcmp(now, self, len) == 0 ? "yes" : "no");
    return 0;
}
