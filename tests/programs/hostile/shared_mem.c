// Shared memory between two processes: role "a" (the one under test: natively or under hrt)
// and role "b" (always native), started together. They meet in one page of KIND:
//   file PATH    a host file (the test writes its first bytes), mmap MAP_SHARED
//   shm NAME     a POSIX shared memory object (shm_open), created by a
//   sysv KEY     a System V segment (shmget), created by a
// a writes its message and stage 1; b waits for it, writes its own and stage 2; a waits for
// that, prints what b wrote, then checks that madvise(MADV_DONTNEED) keeps a shared page's
// bytes and that munmap does not clear them (b reads them after a's munmap: stage 3/4).
// For "file" a also checks Linux's EACCES rules for a read-only descriptor. Waits poll every
// millisecond and give up after 30 s ("timeout" is printed: the test fails, it never hangs).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

struct meeting {
    volatile int stage;
    char a_msg[44];
    char b_msg[80];
    char host_text[64]; // written by the test before the start ("file" only)
};

static int wait_stage(struct meeting *m, int want) {
    for (int i = 0; i < 30000; i++) {
        if (m->stage >= want)
            return 1;
        usleep(1000);
    }
    printf("timeout waiting for stage %d (at %d)\n", want, m->stage);
    return 0;
}

static struct meeting *attach(const char *kind, const char *name, int create, int *sysv_id) {
    size_t len = 8192;
    if (!strcmp(kind, "sysv")) {
        key_t key = (key_t)strtol(name, NULL, 0);
        int id = -1;
        for (int i = 0; i < 30000 && id < 0; i++) {
            id = shmget(key, len, create ? IPC_CREAT | 0600 : 0);
            if (id < 0 && !create)
                usleep(1000);
        }
        if (id < 0) {
            printf("shmget: errno %d\n", errno);
            return NULL;
        }
        *sysv_id = id;
        void *p = shmat(id, NULL, 0);
        return p == (void *)-1 ? NULL : p;
    }
    int fd = -1;
    if (!strcmp(kind, "shm")) {
        for (int i = 0; i < 30000 && fd < 0; i++) {
            fd = shm_open(name, O_RDWR | (create ? O_CREAT : 0), 0600);
            if (fd < 0 && !create)
                usleep(1000);
        }
        if (fd >= 0 && create && ftruncate(fd, len) != 0)
            printf("ftruncate: errno %d\n", errno);
        // The creator sizes it after creating it: touching it before is SIGBUS.
        struct stat st;
        for (int i = 0; i < 30000 && fd >= 0 && fstat(fd, &st) == 0 && st.st_size < (off_t)len; i++)
            usleep(1000);
    } else {
        fd = open(name, O_RDWR);
    }
    if (fd < 0) {
        printf("open %s: errno %d\n", kind, errno);
        return NULL;
    }
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

static void read_only_rules(const char *path) {
    int fd = open(path, O_RDONLY);
    void *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    printf("read-only fd, PROT_WRITE MAP_SHARED: %s errno %d\n", w == MAP_FAILED ? "failed" : "mapped",
           w == MAP_FAILED ? errno : 0);
    struct meeting *r = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
    if (r == MAP_FAILED) {
        printf("read-only fd, PROT_READ MAP_SHARED: failed errno %d\n", errno);
        return;
    }
    printf("read-only mapping sees: %s\n", r->a_msg);
    int rc = mprotect(r, 4096, PROT_READ | PROT_WRITE);
    printf("mprotect PROT_WRITE: %d errno %d\n", rc, rc ? errno : 0);
    munmap(r, 4096);
    close(fd);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: shared_mem a|b file|shm|sysv PATH|NAME|KEY\n");
        return 2;
    }
    int a = !strcmp(argv[1], "a"), id = -1;
    const char *kind = argv[2], *name = argv[3];
    struct meeting *m = attach(kind, name, a && strcmp(kind, "file") != 0, &id);
    if (!m) {
        printf("attach failed: errno %d\n", errno);
        return 1;
    }
    if (a) {
        if (!strcmp(kind, "file"))
            printf("host wrote: %s\n", m->host_text);
        strcpy(m->a_msg, "hello from a");
        __atomic_store_n(&m->stage, 1, __ATOMIC_SEQ_CST);
        if (!wait_stage(m, 2))
            return 1;
        printf("b wrote: %s\n", m->b_msg);
        madvise(m, 8192, MADV_DONTNEED);
        printf("after MADV_DONTNEED: %s / %s\n", m->a_msg, m->b_msg);
        if (!strcmp(kind, "file"))
            read_only_rules(name);
        if (!strcmp(kind, "sysv"))
            shmdt(m);
        else
            munmap(m, 8192);
        // b checks the bytes after our munmap, through its own mapping.
        struct meeting *again = attach(kind, name, 0, &id);
        if (!again)
            return 1;
        __atomic_store_n(&again->stage, 3, __ATOMIC_SEQ_CST);
        if (!wait_stage(again, 4))
            return 1;
        printf("b saw after our unmap: %s\n", again->b_msg);
        if (!strcmp(kind, "shm"))
            shm_unlink(name);
        if (!strcmp(kind, "sysv"))
            shmctl(id, IPC_RMID, NULL);
        return 0;
    }
    if (!wait_stage(m, 1))
        return 1;
    char got[80];
    snprintf(got, sizeof got, "b read \"%s\"", m->a_msg);
    strcpy(m->b_msg, got);
    __atomic_store_n(&m->stage, 2, __ATOMIC_SEQ_CST);
    if (!wait_stage(m, 3))
        return 1;
    // a has unmapped (and mapped again): its message must still be there.
    snprintf(got, sizeof got, "a's message %s", m->a_msg[0] ? "kept" : "cleared");
    strcpy(m->b_msg, got);
    __atomic_store_n(&m->stage, 4, __ATOMIC_SEQ_CST);
    return 0;
}
