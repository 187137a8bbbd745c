/* PVM probe: asks a kvm_pvm host whether it implements the PVM specification
 * (Documentation/virt/kvm/x86/pvm-spec.rst in the virt-pvm tree), from the VMM side and from a
 * guest's ring 0. A diagnostic for docs/pvm.md, not part of hrt. Build and run: tools/pvm-probe/run.sh */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define MEM (64ul << 20)
#define CODE 0x10000ul
#define MSR_STAR 0xc0000081u

static const struct { uint32_t index; const char *name; } pvm_msrs[] = {
    {0x4b564df0, "MSR_PVM_LINEAR_ADDRESS_RANGE"}, {0x4b564df1, "MSR_PVM_VCPU_STRUCT"},
    {0x4b564df2, "MSR_PVM_SUPERVISOR_RSP"},       {0x4b564df4, "MSR_PVM_EVENT_ENTRY"},
    {0x4b564df5, "MSR_PVM_RETU_RIP"},             {0x4b564df6, "MSR_PVM_RETS_RIP"},
    {0x4b564df7, "MSR_PVM_SWITCH_CR3"},
};

static int kvm, vm, vcpu;
static uint8_t *mem;
static struct kvm_run *run;

static void die(const char *what) { perror(what); exit(1); }

static int msr_io(unsigned long req, uint32_t index, uint64_t *value) {
    struct { struct kvm_msrs h; struct kvm_msr_entry e; } m;
    memset(&m, 0, sizeof m);
    m.h.nmsrs = 1;
    m.e.index = index;
    m.e.data = *value;
    int n = ioctl(vcpu, req, &m);
    *value = m.e.data;
    return n; /* entries processed: 0 = refused */
}

/* Runs the snippet at rip; returns 0 and RAX on `out 0x500`, else the KVM exit reason. */
static int call_guest(uint64_t rip, uint64_t rax, uint64_t rcx, struct kvm_regs *out) {
    struct kvm_regs r;
    if (ioctl(vcpu, KVM_GET_REGS, &r) < 0) die("KVM_GET_REGS");
    r.rip = rip, r.rax = rax, r.rcx = rcx, r.rflags = 2, r.rsp = 0x8000;
    if (ioctl(vcpu, KVM_SET_REGS, &r) < 0) die("KVM_SET_REGS");
    if (ioctl(vcpu, KVM_RUN, 0) < 0) die("KVM_RUN");
    if (ioctl(vcpu, KVM_GET_REGS, out) < 0) die("KVM_GET_REGS");
    if (run->exit_reason == KVM_EXIT_IO && run->io.port == 0x500) return 0;
    return (int)run->exit_reason;
}

static void setup_vm(void) {
    kvm = open("/dev/kvm", O_RDWR);
    if (kvm < 0) die("/dev/kvm");
    vm = ioctl(kvm, KVM_CREATE_VM, 0);
    mem = mmap(0, MEM, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    struct kvm_userspace_memory_region reg = {.memory_size = MEM, .userspace_addr = (uint64_t)mem};
    if (vm < 0 || mem == MAP_FAILED || ioctl(vm, KVM_SET_USER_MEMORY_REGION, &reg) < 0) die("VM");
    vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
    run = mmap(0, ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0), PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
    if (vcpu < 0 || run == MAP_FAILED) die("vCPU");
    static struct { struct kvm_cpuid2 h; struct kvm_cpuid_entry2 e[256]; } c = {.h.nent = 256};
    if (ioctl(kvm, KVM_GET_SUPPORTED_CPUID, &c) < 0 || ioctl(vcpu, KVM_SET_CPUID2, &c) < 0) die("CPUID");
    /* Identity map of 64 MiB with 2 MiB pages, also aliased at PML4 slot 273 (an upper-half address). */
    uint64_t *pml4 = (void *)(mem + 0x1000), *pdpt = (void *)(mem + 0x2000), *pd = (void *)(mem + 0x3000);
    pml4[0] = pml4[273] = 0x2000 | 3;
    pdpt[0] = 0x3000 | 3;
    for (uint64_t i = 0; i < 32; i++) pd[i] = (i << 21) | 0x83;
    FILE *f = fopen("guest.bin", "rb");
    if (!f || fread(mem + CODE, 1, 4096, f) == 0) die("guest.bin");
    fclose(f);
    struct kvm_sregs s;
    if (ioctl(vcpu, KVM_GET_SREGS, &s) < 0) die("KVM_GET_SREGS");
    struct kvm_segment cs = {.limit = 0xffffffff, .selector = 0x10, .type = 11, .present = 1, .s = 1, .l = 1, .g = 1};
    struct kvm_segment ds = {.limit = 0xffffffff, .selector = 0x18, .type = 3, .present = 1, .s = 1, .db = 1, .g = 1};
    s.cs = cs, s.ds = s.es = s.fs = s.gs = s.ss = ds;
    s.cr3 = 0x1000, s.cr4 = 0x20 | 0x200 | 0x400, s.cr0 = 0x80050033, s.efer = 0xd01;
    if (ioctl(vcpu, KVM_SET_SREGS, &s) < 0) die("KVM_SET_SREGS");
}

int main(void) {
    setup_vm();
    struct kvm_regs r;
    printf("1. VMM side: KVM_GET_MSRS / KVM_SET_MSRS of the specification's MSRs (entries processed)\n");
    uint64_t star = 0x0023001000000000ull;
    printf("   %-30s set %d (control: an architectural MSR)\n", "MSR_STAR", msr_io(KVM_SET_MSRS, MSR_STAR, &star));
    for (size_t i = 0; i < sizeof pvm_msrs / sizeof pvm_msrs[0]; i++) {
        uint64_t v = 0, w = 0x20000;
        int got = msr_io(KVM_GET_MSRS, pvm_msrs[i].index, &v);
        int set = msr_io(KVM_SET_MSRS, pvm_msrs[i].index, &w);
        printf("   %-30s get %d set %d\n", pvm_msrs[i].name, got, set);
    }

    printf("2. guest ring 0: synthetic CPUID (invlpg 0xffffffffff4d5650; cpuid)\n");
    for (uint32_t leaf = 0x40000000; leaf <= 0x40000002; leaf++) {
        int e = call_guest(CODE + 0x300, leaf, 0, &r);
        printf("   leaf %#x: exit %d eax %#llx ebx %#llx ecx %#llx edx %#llx\n", leaf, e, r.rax, r.r9, r.r10, r.r11);
    }

    printf("3. guest ring 0: WRMSR (no IDT: a #GP ends as a triple fault, KVM exit %d)\n", KVM_EXIT_SHUTDOWN);
    int e = call_guest(CODE + 0x100, star, MSR_STAR, &r);
    printf("   %-30s exit %d%s\n", "MSR_STAR", e, e ? "" : " (accepted)");
    for (size_t i = 1; i < 3; i++) {
        setup_vm(); /* a triple-faulted vCPU cannot continue */
        e = call_guest(CODE + 0x100, 0x20000, pvm_msrs[i].index, &r);
        printf("   %-30s exit %d%s\n", pvm_msrs[i].name, e, e ? "" : " (accepted)");
    }

    printf("4. guest ring 0: cycles per iteration of a dec/jnz loop (native: ~1)\n");
    setup_vm();
    const uint64_t bases[] = {CODE, (0xffffull << 48) | (273ull << 39) | CODE};
    for (size_t b = 0; b < 2; b++) {
        e = call_guest(bases[b], 0, 100000, &r);
        printf("   at %#018llx: exit %d, %.0f cycles per iteration\n", (unsigned long long)bases[b], e, r.rax / 1e5);
    }
    return 0;
}
