/* Preemption and TLB-shootdown interrupts must give every thread back its own registers.
 * Spinner threads (more than the vCPUs) each hold their own known value in every general
 * register (rax ... r15, and rsp through the stack the values are compared with) and check
 * them all on every round of a loop without a system call, so they are preempted while
 * they spin; meanwhile a mapper thread maps, protects and unmaps memory, whose TLB
 * shootdowns interrupt the spinners too. A register that comes back with another value (from
 * another thread, or another moment) is reported by name, with whose value it holds.
 * Bounded: the mapper does a fixed number of rounds; spinners spin at least MIN_CHUNKS
 * chunks and stop once the mapper is done. The output is the same on every run. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>

enum { SPINNERS = 3, NREGS = 15, CHUNK = 1000000, MIN_CHUNKS = 40, MAP_ROUNDS = 20, MAP_PAGES = 16 };

static const char *const names[NREGS] = { "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8",
                                          "r9",  "r10", "r11", "r12", "r13", "r14", "r15" };

/* long check_regs(const unsigned long vals[15], unsigned long rounds, unsigned long got[15]):
 * loads vals into rax..r15 (in `names` order), checks every register against its value
 * `rounds` times, and returns 0, or the rounds left when a check failed (got = registers). */
__asm__(".text\n"
        ".intel_syntax noprefix\n"
        ".globl check_regs\n"
        "check_regs:\n"
        "  push rbx\n push rbp\n push r12\n push r13\n push r14\n push r15\n"
        /* [rsp] rounds, [rsp+8] got, [rsp+16..136) vals, [rsp+136..256) what was found */
        "  sub rsp, 256\n"
        "  mov [rsp], rsi\n"
        "  mov [rsp + 8], rdx\n"
        "  xor ecx, ecx\n"
        "0:\n"
        "  mov rax, [rdi + rcx * 8]\n"
        "  mov [rsp + 16 + rcx * 8], rax\n"
        "  inc ecx\n"
        "  cmp ecx, 15\n"
        "  jne 0b\n"
        "  mov rax, [rsp + 16]\n mov rbx, [rsp + 24]\n mov rcx, [rsp + 32]\n mov rdx, [rsp + 40]\n"
        "  mov rsi, [rsp + 48]\n mov rdi, [rsp + 56]\n mov rbp, [rsp + 64]\n mov r8, [rsp + 72]\n"
        "  mov r9, [rsp + 80]\n mov r10, [rsp + 88]\n mov r11, [rsp + 96]\n mov r12, [rsp + 104]\n"
        "  mov r13, [rsp + 112]\n mov r14, [rsp + 120]\n mov r15, [rsp + 128]\n"
        "1:\n"
        "  cmp rax, [rsp + 16]\n jne 2f\n cmp rbx, [rsp + 24]\n jne 2f\n"
        "  cmp rcx, [rsp + 32]\n jne 2f\n cmp rdx, [rsp + 40]\n jne 2f\n"
        "  cmp rsi, [rsp + 48]\n jne 2f\n cmp rdi, [rsp + 56]\n jne 2f\n"
        "  cmp rbp, [rsp + 64]\n jne 2f\n cmp r8, [rsp + 72]\n jne 2f\n"
        "  cmp r9, [rsp + 80]\n jne 2f\n cmp r10, [rsp + 88]\n jne 2f\n"
        "  cmp r11, [rsp + 96]\n jne 2f\n cmp r12, [rsp + 104]\n jne 2f\n"
        "  cmp r13, [rsp + 112]\n jne 2f\n cmp r14, [rsp + 120]\n jne 2f\n"
        "  cmp r15, [rsp + 128]\n jne 2f\n"
        "  sub qword ptr [rsp], 1\n"
        "  jnz 1b\n"
        "  xor eax, eax\n"
        "  jmp 3f\n"
        "2:\n"
        "  mov [rsp + 136], rax\n mov [rsp + 144], rbx\n mov [rsp + 152], rcx\n mov [rsp + 160], rdx\n"
        "  mov [rsp + 168], rsi\n mov [rsp + 176], rdi\n mov [rsp + 184], rbp\n mov [rsp + 192], r8\n"
        "  mov [rsp + 200], r9\n mov [rsp + 208], r10\n mov [rsp + 216], r11\n mov [rsp + 224], r12\n"
        "  mov [rsp + 232], r13\n mov [rsp + 240], r14\n mov [rsp + 248], r15\n"
        "  mov rdx, [rsp + 8]\n"
        "  xor ecx, ecx\n"
        "4:\n"
        "  mov rax, [rsp + 136 + rcx * 8]\n"
        "  mov [rdx + rcx * 8], rax\n"
        "  inc ecx\n"
        "  cmp ecx, 15\n"
        "  jne 4b\n"
        "  mov rax, [rsp]\n"
        "3:\n"
        "  add rsp, 256\n"
        "  pop r15\n pop r14\n pop r13\n pop r12\n pop rbp\n pop rbx\n"
        "  ret\n"
        ".att_syntax prefix\n");
long check_regs(const unsigned long *vals, unsigned long rounds, unsigned long *got);

static atomic_int mapper_done;
static atomic_int spinners_started;
static int bad_regs[SPINNERS];

/* Thread k's value for register r: the owner and the register can be read back from it. */
static unsigned long value_of(int k, int r) {
    return 0x5a5a000000000000ul | (unsigned long)(k + 1) << 32 | (unsigned long)(r + 1) << 8 | 0x11;
}

static void describe(unsigned long v) {
    if ((v & 0xffff0000000000fful) == 0x5a5a000000000011ul) {
        int k = (int)(v >> 32 & 0xffff) - 1, r = (int)(v >> 8 & 0xff) - 1;
        if (k >= 0 && k < SPINNERS && r >= 0 && r < NREGS) {
            printf(" (spinner %d's %s)", k, names[r]);
            return;
        }
    }
    printf(" (no spinner's)");
}

static void *spin(void *arg) {
    int k = (int)(long)arg;
    unsigned long vals[NREGS], got[NREGS];
    for (int r = 0; r < NREGS; r++)
        vals[r] = value_of(k, r);
    atomic_fetch_add(&spinners_started, 1);
    for (int chunk = 0; chunk < MIN_CHUNKS || !atomic_load(&mapper_done); chunk++) {
        if (check_regs(vals, CHUNK, got) == 0)
            continue;
        for (int r = 0; r < NREGS; r++) {
            if (got[r] != vals[r]) {
                bad_regs[k]++;
                printf("spinner %d chunk %d: %s = %#lx, not %#lx", k, chunk, names[r], got[r], vals[r]);
                describe(got[r]);
                printf("\n");
            }
        }
    }
    return NULL;
}

/* Maps, touches, protects (as a thread stack's guard page is) and unmaps memory: every
 * reduction of access is a TLB shootdown that interrupts the other vCPU. */
static void *mapper(void *arg) {
    (void)arg;
    long failures = 0;
    while (atomic_load(&spinners_started) < SPINNERS)
        ;
    for (int i = 0; i < MAP_ROUNDS; i++) {
        char *p = mmap(NULL, MAP_PAGES * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            failures++;
            continue;
        }
        for (int pg = 0; pg < MAP_PAGES; pg++)
            p[pg * 4096] = (char)i;
        failures += mprotect(p, 4096, PROT_NONE) != 0;
        failures += mprotect(p + 4096, (MAP_PAGES - 1) * 4096, PROT_READ) != 0;
        failures += munmap(p, MAP_PAGES * 4096) != 0;
    }
    atomic_store(&mapper_done, 1);
    printf("mapper: %d rounds, %ld failures\n", MAP_ROUNDS, failures);
    return NULL;
}

int main(void) {
    pthread_t t[SPINNERS], m;
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_create(&m, NULL, mapper, NULL);
    for (long k = 0; k < SPINNERS; k++)
        pthread_create(&t[k], NULL, spin, (void *)k);
    for (int k = 0; k < SPINNERS; k++)
        pthread_join(t[k], NULL);
    pthread_join(m, NULL);
    int total = 0;
    for (int k = 0; k < SPINNERS; k++)
        total += bad_regs[k];
    printf("%d spinners, registers that changed: %d\n", SPINNERS, total);
    return total != 0;
}
