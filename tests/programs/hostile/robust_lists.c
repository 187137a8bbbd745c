/* Robust lists built by hand (as glibc would, but odd): a thread registers one with
 * set_robust_list and ends with a raw exit, and main looks at what the kernel left in each
 * futex word. The pending entry, the waiters bit, another owner's word, a bad next pointer,
 * a misaligned word, a read-only word, a cycle, the 2048-entry limit, a PI entry, an
 * unreadable head. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define WAITERS 0x80000000u
#define DIED 0x40000000u
#define N 3000

struct entry {
    struct entry *next;
    unsigned word; /* futex_offset 8 */
};

struct head {
    struct entry *next;
    long offset;
    struct entry *pending;
};

static struct head h;
static struct entry e[N];
static unsigned tid;
static char *ro_page;
static _Alignas(16) char odd[64];

static const char *show(unsigned w) {
    static char buf[64];
    if (w == tid)
        return "held";
    if (w == (tid | WAITERS))
        return "held+waiters";
    if (w == DIED)
        return "owner-died";
    if (w == (DIED | WAITERS))
        return "owner-died+waiters";
    if (w == 0)
        return "0";
    if (w == WAITERS)
        return "waiters";
    if (w == tid + 1)
        return "other-owner";
    snprintf(buf, sizeof buf, "%#x", w);
    return buf;
}

static struct entry *link_pi(struct entry *p) { return (struct entry *)((uintptr_t)p | 1); }

/* Builds case `c`'s list for thread `tid`. */
static void build_list(int c) {
    memset(e, 0, sizeof e);
    h.next = (struct entry *)&h;
    h.offset = 8;
    h.pending = NULL;
    switch (c) {
    case 'A': /* the pending entry alone */
        h.pending = &e[0];
        e[0].word = tid;
        break;
    case 'B': /* the waiters bit stays */
        h.next = &e[0];
        e[0].next = (struct entry *)&h;
        e[0].word = tid | WAITERS;
        break;
    case 'C': /* another thread's word is left alone */
        h.next = &e[0];
        e[0].next = &e[1];
        e[1].next = (struct entry *)&h;
        e[0].word = tid + 1;
        e[1].word = tid;
        break;
    case 'D': /* a bad next pointer ends the walk, before the pending entry */
        h.next = &e[0];
        e[0].next = (struct entry *)0x10;
        e[0].word = tid;
        h.pending = &e[1];
        e[1].word = tid;
        break;
    case 'E': { /* a misaligned word ends the walk */
        struct entry *x = (struct entry *)(odd + 1);
        h.next = &e[0];
        e[0].next = x;
        e[0].word = tid;
        memcpy(&x->next, &(struct entry *){&e[1]}, sizeof(void *));
        e[1].next = (struct entry *)&h;
        e[1].word = tid;
        h.pending = &e[2];
        e[2].word = tid;
        break;
    }
    case 'F': { /* a read-only word ends the walk */
        struct entry *r = (struct entry *)ro_page;
        h.next = &e[0];
        e[0].next = r;
        e[0].word = tid;
        mprotect(ro_page, 4096, PROT_READ | PROT_WRITE);
        r->next = &e[1];
        r->word = tid;
        mprotect(ro_page, 4096, PROT_READ);
        e[1].next = (struct entry *)&h;
        e[1].word = tid;
        break;
    }
    case 'G': /* a cycle stops at the limit; the pending entry still counts */
        h.next = &e[0];
        e[0].next = &e[1];
        e[1].next = &e[0];
        e[0].word = tid;
        e[1].word = tid | WAITERS;
        h.pending = &e[2];
        e[2].word = tid;
        break;
    case 'H': /* 3000 entries: the first 2048, and the pending one */
        h.next = &e[0];
        for (int i = 0; i < N; i++) {
            e[i].next = i + 1 < N ? &e[i + 1] : (struct entry *)&h;
            e[i].word = tid;
        }
        h.pending = &e[N - 1];
        break;
    case 'I': /* the pending entry with its owner gone: a wake-up, the word kept */
        h.pending = &e[0];
        e[0].word = WAITERS;
        break;
    case 'J': /* PI entries (bit 0 of the link) are marked too */
        h.next = link_pi(&e[0]);
        e[0].next = (struct entry *)&h;
        e[0].word = tid | WAITERS;
        break;
    }
}

static void *thread(void *arg) {
    int c = (int)(intptr_t)arg;
    tid = syscall(SYS_gettid);
    if (c == 'K') {
        /* An unreadable head: nothing to walk. */
        syscall(SYS_set_robust_list, (void *)0x10, sizeof h);
    } else {
        build_list(c);
        long r = syscall(SYS_set_robust_list, &h, sizeof h);
        if (r != 0)
            printf("%c: set_robust_list: %ld\n", c, r);
    }
    syscall(SYS_exit, 0);
    return NULL;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    alarm(30);
    ro_page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ro_page == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    for (int c = 'A'; c <= 'K'; c++) {
        pthread_t t;
        if (pthread_create(&t, NULL, thread, (void *)(intptr_t)c) != 0) {
            printf("pthread_create failed\n");
            return 1;
        }
        pthread_join(t, NULL);
        printf("%c:", c);
        switch (c) {
        case 'E':
            printf(" %s %s %s", show(e[0].word), show(e[1].word), show(e[2].word));
            break;
        case 'F':
            printf(" %s %s %s", show(e[0].word), show(((struct entry *)ro_page)->word), show(e[1].word));
            break;
        case 'H': {
            int died = 0, held = 0;
            for (int i = 0; i < N; i++) {
                died += e[i].word == DIED;
                held += e[i].word == tid;
            }
            printf(" %d owner-died, %d held, last %s, 2047th %s, 2048th %s", died, held, show(e[N - 1].word),
                   show(e[2047].word), show(e[2048].word));
            break;
        }
        case 'K':
            printf(" the thread ended");
            break;
        default:
            printf(" %s %s %s", show(e[0].word), show(e[1].word), show(e[2].word));
        }
        printf("\n");
    }
    printf("robust lists: done\n");
    return 0;
}
