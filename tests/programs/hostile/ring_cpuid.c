// CPUID sites rewritten into jumps to a slot that answers from the kernel's table
// (kernel/src/linux/cpuid_sites.rs): every answer must be the CPU's, and nothing else may
// change: registers, flags, the red zone of a leaf function, signals arriving meanwhile.
// Cases: "leaves" prints the answers for a list of leaves and subleaves (per-CPU fields
// masked), some asked from a function that dispatches through a jump table; "apic" prints the
// APIC IDs leaves 1, 0xb and 0x1f give on each CPU in turn (the thread pinned there);
// "redzone" checks a hand-written leaf function's red zone, registers and carry flag across
// its CPUID; "signals" asks in a loop while a handler asks too. Built with -DNO_JUMP_TABLES,
// the dispatching function has no jump table (the test compares how many sites each build
// has rewritten: a jump table must not keep a site that qualifies otherwise).
#define _GNU_SOURCE
#include <cpuid.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static void ask(unsigned leaf, unsigned sub, unsigned r[4]) {
    __cpuid_count(leaf, sub, r[0], r[1], r[2], r[3]);
}

// A leaf function that keeps data in its red zone and in caller-saved registers across a
// CPUID; returns a bit for each thing that changed (0: nothing).
unsigned redzone_cpuid(unsigned leaf);
__asm__(".text\n"
        ".globl redzone_cpuid\n"
        ".type redzone_cpuid, @function\n"
        "redzone_cpuid:\n"
        "    push %rbx\n"
        "    mov $0x3333, %r8\n"
        "    mov $0x4444, %r9\n"
        "    mov $0x5555, %r10\n"
        "    mov $0x6666, %r11\n"
        "    mov $0x7777, %rsi\n"
        "    movq $0x1111, -8(%rsp)\n"
        "    movq $0x2222, -120(%rsp)\n"
        "    mov %edi, %eax\n"
        "    xor %ecx, %ecx\n"
        "    stc\n"
        "    cpuid\n"
        "    mov $0, %eax\n"
        "    jc 1f\n"
        "    or $1, %eax\n"
        "1:  cmpq $0x1111, -8(%rsp)\n"
        "    je 2f\n"
        "    or $2, %eax\n"
        "2:  cmpq $0x2222, -120(%rsp)\n"
        "    je 3f\n"
        "    or $4, %eax\n"
        "3:  cmp $0x3333, %r8\n"
        "    je 4f\n"
        "    or $8, %eax\n"
        "4:  cmp $0x4444, %r9\n"
        "    je 5f\n"
        "    or $16, %eax\n"
        "5:  cmp $0x5555, %r10\n"
        "    je 6f\n"
        "    or $32, %eax\n"
        "6:  cmp $0x6666, %r11\n"
        "    je 7f\n"
        "    or $64, %eax\n"
        "7:  cmp $0x7777, %rsi\n"
        "    je 8f\n"
        "    or $128, %eax\n"
        "8:  pop %rbx\n"
        "    ret\n"
        ".size redzone_cpuid, .-redzone_cpuid\n");

__attribute__((noinline)) static void note(const char *what, unsigned v) { printf("%s %u\n", what, v); }

// A switch dense enough for gcc -O2 to dispatch through a jump table (unless NO_JUMP_TABLES),
// one of whose cases holds a CPUID.
#ifdef NO_JUMP_TABLES
__attribute__((optimize("no-jump-tables")))
#endif
__attribute__((noinline)) static void dispatch(unsigned k, unsigned r[4]) {
    switch (k) {
    case 0: note("zero", k); break;
    case 1: note("one", k * 3); break;
    case 2: note("two", k + 7); break;
    case 3: __cpuid_count(4, k - 3, r[0], r[1], r[2], r[3]); break;
    case 4: note("four", k ^ 5); break;
    case 5: note("five", k << 2); break;
    case 6: note("six", k - 1); break;
    default: note("other", k); break;
    }
}

// Two switches in one function, each dispatched through a jump table (unless
// NO_JUMP_TABLES), their tables back to back in read-only data, as in glibc's `handle_amd`,
// with CPUIDs between and in their cases: a table read past its end into the next one gave
// targets that were none, and the function kept sites it qualifies for.
#ifdef NO_JUMP_TABLES
__attribute__((optimize("no-jump-tables")))
#endif
__attribute__((noinline)) static unsigned two_tables(unsigned k, unsigned j, unsigned r[4]) {
    unsigned a, b, c, d, v = 0;
    __cpuid(0x80000000, a, b, c, d);
    switch (k) {
    case 0: v = a & 0xff; break;
    case 1: v = 3 * k; break;
    case 2: __cpuid(0x80000005, r[0], r[1], r[2], r[3]); v = r[2] >> 24; break;
    case 3: v = k + 11; break;
    case 4: __cpuid(0x80000006, r[0], r[1], r[2], r[3]); v = r[2] & 0xff; break;
    case 5: v = k << 3; break;
    case 6: v = k ^ 0x55; break;
    case 7: v = k - 2; break;
    default: v = 1; break;
    }
    __cpuid(0x80000001, a, b, c, d);
    switch (j & 0xf) {
    case 0: v += 1; break;
    case 1: v += b & 1; break;
    case 2: v *= 3; break;
    case 3: __cpuid_count(7, 0, r[0], r[1], r[2], r[3]); v += r[0] & 0xf; break;
    case 4: v ^= 9; break;
    case 5: v -= 1; break;
    case 6: v += 17; break;
    case 7: v <<= 1; break;
    case 8: v += 5; break;
    case 9: v += 6; break;
    default: v += 100; break;
    }
    return v;
}

static void leaves(void) {
    static const unsigned asked[][2] = {
        {0, 0}, {1, 0}, {2, 0}, {2, 0x3f}, {2, 0x77fff}, {4, 0}, {4, 1}, {4, 2}, {4, 3}, {4, 4}, {4, 5},
        {4, 9}, {6, 0}, {7, 0}, {7, 1}, {7, 2}, {0xb, 0}, {0xb, 1}, {0xb, 2}, {0xd, 0}, {0xd, 1}, {0xd, 2},
        {0xd, 5}, {0xd, 7}, {0xd, 9}, {0x14, 0}, {0x14, 1}, {0x19, 0}, {0x1f, 0}, {0x40000000, 0},
        {0x40000001, 0}, {0x80000000, 0}, {0x80000001, 0}, {0x80000002, 0}, {0x80000003, 0},
        {0x80000004, 0}, {0x80000005, 0}, {0x80000006, 0}, {0x80000007, 0}, {0x80000008, 0},
        {0x8000001d, 0}, {0x12345, 0}, {0x80001234, 0},
    };
    for (int round = 0; round < 2; round++) // the second round from the table, if it keeps them
        for (unsigned i = 0; i < sizeof asked / sizeof asked[0]; i++) {
            unsigned r[4];
            ask(asked[i][0], asked[i][1], r);
            if (asked[i][0] == 1) r[1] &= 0x00ffffff; // the CPU's APIC ID
            if (asked[i][0] == 0xb || asked[i][0] == 0x1f) r[3] = 0; // its x2APIC ID
            printf("%d %#x/%#x: %08x %08x %08x %08x\n", round, asked[i][0], asked[i][1], r[0], r[1], r[2], r[3]);
        }
    for (unsigned k = 0; k < 8; k++) {
        unsigned r[4] = {0};
        dispatch(k, r);
        printf("dispatch %u: %08x %08x %08x %08x\n", k, r[0], r[1], r[2], r[3]);
    }
    for (unsigned k = 0; k < 9; k++)
        for (unsigned j = 0; j < 11; j++) {
            unsigned r[4] = {0};
            unsigned v = two_tables(k, j, r);
            printf("two tables %u %u: %u %08x %08x %08x %08x\n", k, j, v, r[0], r[1], r[2], r[3]);
        }
}

// The APIC IDs on each CPU: asked twice there (the second answer from the table, if it keeps
// the leaf), the thread pinned to that CPU.
static void apic(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long c = 0; c < n; c++) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(c, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            perror("sched_setaffinity");
            return;
        }
        for (int round = 0; round < 2; round++) {
            unsigned r[4], b[4], x[4];
            ask(1, 0, r);
            ask(0xb, 0, b);
            ask(0xb, 1, x);
            printf("cpu %ld round %d: leaf 1 apic %u, 0xb/0 %u, 0xb/1 %u, ebx %06x ecx %08x edx %08x\n", c,
                   round, r[1] >> 24, b[3], x[3], r[1] & 0xffffff, r[2], r[3]);
        }
    }
}

static unsigned first[4][4];
static volatile int bad, stop;

static void on_usr1(int sig) {
    (void)sig;
    unsigned r[4];
    for (unsigned s = 0; s < 4; s++) {
        ask(4, s, r);
        if (memcmp(r, first[s], sizeof r) != 0) bad = 1;
    }
}

static void *asker(void *arg) {
    (void)arg;
    for (long i = 0; i < 400000 && !stop; i++) {
        unsigned r[4];
        ask(4, i & 3, r);
        if (memcmp(r, first[i & 3], sizeof r) != 0) bad = 1;
    }
    stop = 1;
    return NULL;
}

static void signals(void) {
    for (unsigned s = 0; s < 4; s++) ask(4, s, first[s]);
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    pthread_create(&t, NULL, asker, NULL);
    int sent = 0;
    while (!stop && sent < 2000) {
        pthread_kill(t, SIGUSR1);
        sent++;
        usleep(50);
    }
    pthread_join(t, NULL);
    printf("signals: %s\n", bad ? "an answer changed" : "same answers throughout");
}

int main(int argc, char **argv) {
    const char *c = argc > 1 ? argv[1] : "leaves";
    if (!strcmp(c, "leaves")) {
        leaves();
    } else if (!strcmp(c, "apic")) {
        apic();
    } else if (!strcmp(c, "redzone")) {
        unsigned changed = 0;
        for (unsigned leaf = 0; leaf < 8; leaf++) changed |= redzone_cpuid(leaf);
        changed |= redzone_cpuid(0x80000000) | redzone_cpuid(0x80000008) | redzone_cpuid(1);
        printf("redzone: %s (%#x)\n", changed ? "changed" : "kept", changed);
    } else if (!strcmp(c, "signals")) {
        signals();
    } else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    return 0;
}
