// Memory policies as a one-node machine answers them (the VM has one NUMA node by default, and
// so has the test host): get_mempolicy and set_mempolicy with valid and invalid arguments, each
// result printed, compared with the native run. `ps` and libnuma make these calls at start-up.
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MPOL_DEFAULT 0
#define MPOL_PREFERRED 1
#define MPOL_BIND 2
#define MPOL_INTERLEAVE 3
#define MPOL_LOCAL 4
#define MPOL_PREFERRED_MANY 5
#define MPOL_F_NODE 1
#define MPOL_F_ADDR 2
#define MPOL_F_MEMS_ALLOWED 4
#define MPOL_F_RELATIVE_NODES (1 << 14)
#define MPOL_F_STATIC_NODES (1 << 15)

static long get(int *mode, unsigned long *mask, unsigned long maxnode, void *addr, unsigned long flags) {
    return syscall(SYS_get_mempolicy, mode, mask, maxnode, addr, flags);
}

static long set(int mode, unsigned long *mask, unsigned long maxnode) {
    return syscall(SYS_set_mempolicy, mode, mask, maxnode);
}

static long bind_range(void *start, unsigned long len, int mode, unsigned long *mask, unsigned long maxnode,
                       unsigned flags) {
    return syscall(SYS_mbind, start, len, mode, mask, maxnode, flags);
}

static void show(const char *what, long r, int mode, unsigned long *mask) {
    if (r < 0)
        printf("%-40s -1 %s\n", what, strerror(errno));
    else
        printf("%-40s %ld mode=%d mask=%#lx,%#lx\n", what, r, mode, mask[0], mask[1]);
}

// The current policy as get_mempolicy reports it.
static void current(const char *after) {
    unsigned long mask[16] = {~0ul, ~0ul};
    int mode = -1;
    char what[64];
    snprintf(what, sizeof what, "after %s", after);
    long r = get(&mode, mask, 1025, NULL, 0);
    show(what, r, mode, mask);
}

int main(void) {
    static int data = 1;
    unsigned long mask[16];
    int mode;
#define GET(what, m, mx, addr, fl)                                                   \
    do {                                                                             \
        memset(mask, 0xff, sizeof mask);                                             \
        mode = -1;                                                                   \
        long r_ = get(&mode, m ? mask : NULL, mx, addr, fl);                         \
        show(what, r_, mode, mask);                                                  \
    } while (0)
    GET("default", 1, 1025, NULL, 0);
    GET("default, maxnode 65", 1, 65, NULL, 0);
    GET("default, maxnode 2", 1, 2, NULL, 0);
    GET("maxnode 0 with a mask", 1, 0, NULL, 0);
    GET("no mask", 0, 0, NULL, 0);
    GET("mems allowed", 1, 1025, NULL, MPOL_F_MEMS_ALLOWED);
    GET("mems allowed with F_NODE", 1, 1025, NULL, MPOL_F_MEMS_ALLOWED | MPOL_F_NODE);
    GET("F_NODE alone", 1, 1025, NULL, MPOL_F_NODE);
    GET("node of a page", 0, 0, &data, MPOL_F_NODE | MPOL_F_ADDR);
    GET("policy of a page", 1, 1025, &data, MPOL_F_ADDR);
    GET("addr without F_ADDR", 1, 1025, &data, 0);
    GET("unknown flag", 1, 1025, NULL, 8);
    GET("mask past a page", 1, 4096 * 8 + 2, NULL, 0);
    show("bad mode pointer", get((int *)8, NULL, 0, NULL, 0), 0, (unsigned long[2]){0, 0});

    unsigned long node0[16] = {1}, node5[16] = {1ul << 5}, none[16] = {0};
    show("set bind node 0", set(MPOL_BIND, node0, 1025), 0, node0);
    current("bind node 0");
    show("set interleave node 0", set(MPOL_INTERLEAVE, node0, 1025), 0, node0);
    current("interleave");
    memset(mask, 0, sizeof mask);
    mode = -1;
    long r = get(&mode, NULL, 0, NULL, MPOL_F_NODE);
    show("F_NODE under interleave", r, mode, mask);
    show("set preferred, empty", set(MPOL_PREFERRED, none, 1025), 0, none);
    current("preferred, empty");
    show("set preferred node 0 static", set(MPOL_PREFERRED | MPOL_F_STATIC_NODES, node0, 1025), 0, node0);
    current("preferred static");
    show("set preferred-many node 0", set(MPOL_PREFERRED_MANY, node0, 1024), 0, node0);
    current("preferred-many");
    show("set local", set(MPOL_LOCAL, NULL, 0), 0, none);
    current("local");
    show("set local with a node", set(MPOL_LOCAL, node0, 1025), 0, node0);
    show("set bind, no node", set(MPOL_BIND, none, 1025), 0, none);
    show("set bind, node 5 only", set(MPOL_BIND, node5, 1025), 0, node5);
    show("set default with a node", set(MPOL_DEFAULT, node0, 1025), 0, node0);
    show("set mode 99", set(99, node0, 1025), 0, node0);
    show("set static and relative", set(MPOL_BIND | MPOL_F_STATIC_NODES | MPOL_F_RELATIVE_NODES, node0, 1025), 0,
         node0);
    show("set bind, bad mask pointer", set(MPOL_BIND, (unsigned long *)8, 1025), 0, none);
    show("set default", set(MPOL_DEFAULT, NULL, 0), 0, none);
    current("default");

    /* mbind, as OpenBLAS calls it on its buffers (MPOL_PREFERRED, no nodes), and its errors. */
    char *buf = mmap(NULL, 1 << 21, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    show("mbind preferred, no nodes", bind_range(buf, 1 << 21, MPOL_PREFERRED, NULL, 0, 0), 0, none);
    show("mbind bind node 0, strict move", bind_range(buf, 4096, MPOL_BIND, node0, 1025, 3), 0, node0);
    show("mbind interleave node 0", bind_range(buf, 100, MPOL_INTERLEAVE, node0, 65, 0), 0, node0);
    show("mbind default", bind_range(buf, 1 << 21, MPOL_DEFAULT, NULL, 0, 0), 0, none);
    show("mbind length 0", bind_range(buf, 0, MPOL_BIND, node0, 65, 0), 0, node0);
    show("mbind unaligned start", bind_range(buf + 1, 4096, MPOL_BIND, node0, 65, 0), 0, node0);
    show("mbind unknown flag", bind_range(buf, 4096, MPOL_BIND, node0, 65, 64), 0, node0);
    show("mbind bind, no node", bind_range(buf, 4096, MPOL_BIND, none, 65, 0), 0, none);
    show("mbind default with a node", bind_range(buf, 4096, MPOL_DEFAULT, node0, 65, 0), 0, node0);
    show("mbind mode 99", bind_range(buf, 4096, 99, node0, 65, 0), 0, node0);
    munmap(buf + (1 << 20), 1 << 20);
    show("mbind over an unmapped part", bind_range(buf, 1 << 21, MPOL_BIND, node0, 65, 0), 0, node0);
    return 0;
}
