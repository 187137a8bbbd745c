//! CPUID answered from memory. On a PVM host every CPUID of the guest traps to the host and
//! back (~35 us here, against ~8 natively on this host, itself a VM), and glibc's start-up
//! executes about 67 of them (`init_cpu_features` and its cache-size loops), ~2.3 ms of every
//! program start and every exec. The Linux layer rewrites the program's CPUID sites into calls
//! to the stub below (`linux::cpuid_sites`), which answers leaves whose answer is the same on
//! every CPU and for the whole run from a table, filled by the first real CPUID of each.
//!
//! The stub lies in the user-executable page of the kernel's code (`syscall`), which the trap
//! handlers count as program code: an interrupt or signal there is one in the program, whose
//! stack the stub uses (four words; the site's function uses no red zone, `linux::rewrite`).
//! Called with the leaf in eax and the subleaf in ecx, it returns what CPUID returns in eax,
//! ebx, ecx and edx (zero-extended, as CPUID writes them) and keeps every other register and
//! the flags. A table answer is followed by MFENCE and LFENCE, for code that uses CPUID as a
//! fence (`cpuid; rdtsc`); unlike CPUID, that does not serialize instruction fetch.
//!
//! Which leaves: those KVM answers from the table the monitor gave it without changing fields:
//! 0, 2, 4, 7, 0xd, 0x14, 0x19 and 0x8000_0000-0x8000_0008 (0xd's sizes follow XCR0 and 7's
//! OSPKE bit CR4, which the kernel sets once, the same on every CPU), and 1, 0xb and 0x1f,
//! whose one per-CPU field, the APIC ID (leaf 1's EBX bits 24-31, 0xb's and 0x1f's EDX), the
//! stub puts in from the current CPU's number (`PerCpu::id` through GS: the monitor gives vCPU
//! n the APIC ID n, `cpu::apic_id`, in every entry of those leaves KVM holds). Those three are
//! answered only from the entries the monitor passed (`seed`): a subleaf KVM does not hold
//! answers zeros in EDX on every CPU, which the stub's substitution would get wrong, so such a
//! miss is not kept; its answer gets the current CPU's ID too (where the hypervisor below the
//! host answers CPUID, it would be the ID of the host CPU the vCPU runs on at the moment).
//! Anything else runs CPUID every time.

use core::sync::atomic::{AtomicU64, Ordering};

/// Table entries: a program's start asks ~35 distinct (leaf, subleaf) pairs.
pub const ENTRIES: usize = 64;
/// Bytes per entry: the key (`!(leaf << 32 | subleaf)`, 0 while free), eax, ebx, ecx, edx, padding.
pub const ENTRY_LEN: usize = 32;

#[repr(C, align(64))]
pub struct Table(pub [[AtomicU64; ENTRY_LEN / 8]; ENTRIES]);

/// The answers, written by the stub (ring 3, the program's context): an entry's registers
/// first, then its key (x86 keeps stores in order; readers load the key
/// first), so a reader that finds the key finds the registers. Two CPUs missing the same
/// leaf at once both append it: the same answer twice, harmless.
#[no_mangle]
pub static HRT_CPUID_TABLE: Table = Table([const { [const { AtomicU64::new(0) }; ENTRY_LEN / 8] }; ENTRIES]);
/// Entries handed out so far (may pass `ENTRIES`: then nothing more is kept).
#[no_mangle]
pub static HRT_CPUID_USED: AtomicU64 = AtomicU64::new(0);

/// Which leaves the table keeps: `[basic, extended]`, bit i for leaf i (or 0x8000_0000 + i),
/// bit 32 + i if its subleaf (ecx) selects the answer (else ecx is ignored, as CPUID ignores it).
#[no_mangle]
pub static HRT_CPUID_CLASS: [u64; 2] =
    [class(&[0, 1, 2, 0x19], &[4, 7, 0xb, 0xd, 0x14, 0x1f]), class(&[0, 1, 2, 3, 4, 5, 6, 7, 8], &[])];

const fn class(plain: &[u32], indexed: &[u32]) -> u64 {
    let mut bits = 0u64;
    let mut i = 0;
    while i < plain.len() {
        bits |= 1 << plain[i];
        i += 1;
    }
    let mut i = 0;
    while i < indexed.len() {
        bits |= 1 << indexed[i] | 1 << (32 + indexed[i]);
        i += 1;
    }
    bits
}

/// The stub's key for `leaf`/`subleaf`, if the table keeps that leaf.
fn key(leaf: u32, subleaf: u32) -> Option<u64> {
    let (bits, i) = match leaf {
        0..32 => (HRT_CPUID_CLASS[0], leaf),
        0x8000_0000..0x8000_0020 => (HRT_CPUID_CLASS[1], leaf - 0x8000_0000),
        _ => return None,
    };
    let sub = if bits & (1 << (32 + i)) != 0 { subleaf } else { 0 };
    (bits & (1 << i) != 0).then_some(!((leaf as u64) << 32 | sub as u64))
}

/// CPUID for the kernel's own questions in ring 3 (boot CPU, before other CPUs or the program
/// run): from the table where it keeps the leaf, else the CPU's answer. The APIC-ID fields of
/// leaves 1, 0xb and 0x1f may be another CPU's (the stub puts the current one's in, this does
/// not). Not for CPUID as a serializing instruction (`membarrier`), nor in ring 0, where each
/// instruction of the lookup is emulated: use `instr::cpuid` there.
pub fn answer(leaf: u32, subleaf: u32) -> (u32, u32, u32, u32) {
    seed();
    let found = key(leaf, subleaf).and_then(|key| {
        let e = HRT_CPUID_TABLE
            .0
            .iter()
            .take_while(|e| e[0].load(Ordering::Acquire) != 0)
            .find(|e| e[0].load(Ordering::Acquire) == key)?;
        let (ab, cd) = (e[1].load(Ordering::Relaxed), e[2].load(Ordering::Relaxed));
        Some((ab as u32, (ab >> 32) as u32, cd as u32, (cd >> 32) as u32))
    });
    found.unwrap_or_else(|| super::instr::cpuid(leaf, subleaf))
}

/// Fills the table with the answers KVM holds for the boot vCPU (`BootInfo::cpuid`), once,
/// before the program runs, so that its first CPUID of each of those leaves needs no trap
/// either.
pub fn seed() {
    if HRT_CPUID_USED.load(Ordering::Acquire) != 0 {
        return;
    }
    let boot = crate::bootinfo::get();
    let held = &boot.cpuid[..(boot.cpuid_count as usize).min(boot.cpuid.len())];
    let ask_the_cpu = !held_is_what_the_cpu_answers(held);
    for a in held {
        let Some(key) = key(a.leaf, a.subleaf) else { continue };
        let n = HRT_CPUID_USED.fetch_add(1, Ordering::AcqRel) as usize;
        let Some(e) = HRT_CPUID_TABLE.0.get(n) else { return };
        let regs = if ask_the_cpu {
            let (a, b, c, d) = super::instr::cpuid(a.leaf, a.subleaf);
            [a, b, c, d]
        } else {
            a.regs
        };
        let [eax, ebx, ecx, edx] = regs.map(u64::from);
        e[1].store(eax | ebx << 32, Ordering::Relaxed);
        e[2].store(ecx | edx << 32, Ordering::Relaxed);
        e[0].store(key, Ordering::Release);
    }
}

/// Whether the answers KVM holds (`BootInfo::cpuid`) are what CPUID answers here, judged by
/// leaves 1 and 7 (two real CPUIDs; leaf 1's APIC ID and OSXSAVE bit aside, which the stub
/// and CR4 decide). Not on every host: where the hypervisor below the host's own answers the
/// program's CPUID in ring 3 (this project's second PVM host: ~14 K cycles, the host's own
/// answers), they are the host's (PCID, more leaf 7 and 0x8000_0001 bits, the brand string),
/// not KVM's, and the table must give the program the same.
fn held_is_what_the_cpu_answers(held: &[hrt_abi::CpuidAnswer]) -> bool {
    [(1, 0), (7, 0)].into_iter().all(|(leaf, subleaf)| {
        let Some(h) = held.iter().find(|a| a.leaf == leaf && a.subleaf == subleaf) else { return true };
        let (a, b, c, d) = super::instr::cpuid(leaf, subleaf);
        let (b_mask, c_mask) = if leaf == 1 { (0x00ff_ffff, !(1 << 27)) } else { (!0, !0) };
        h.regs == [a, h.regs[1] & !b_mask | b & b_mask, h.regs[2] & !c_mask | c & c_mask, d]
    })
}

/// The stub's code, for the user page's `global_asm!` (`syscall`), with operands `table`,
/// `used`, `class` (the statics above), `entries`, `entry_len` and `cpu_id` (`PerCpu::id`'s
/// offset from GS).
macro_rules! cpuid_stub_asm {
    () => {
        concat!(
            ".global hrt_cpuid_stub\n",
            "hrt_cpuid_stub:\n",
            "    pushfq\n",
            "    push rsi\n",
            "    push rdi\n",
            "    push r8\n",
            "    mov r8d, eax\n", // the leaf, kept for a real CPUID
            "    mov edi, eax\n",
            "    lea rsi, [rip + {class}]\n",
            "    cmp edi, 32\n",
            "    jb 2f\n",
            "    sub edi, 0x80000000\n",
            "    cmp edi, 32\n",
            "    jae 8f\n",
            "    add rsi, 8\n",
            "2:  mov rsi, [rsi]\n",
            "    bt rsi, rdi\n",
            "    jnc 8f\n", // a leaf the table does not keep
            "    add edi, 32\n",
            "    bt rsi, rdi\n",
            "    mov esi, ecx\n",
            "    jc 3f\n",
            "    xor esi, esi\n", // ecx does not matter for this leaf
            "3:  mov rdi, r8\n",
            "    shl rdi, 32\n",
            "    or rsi, rdi\n",
            "    not rsi\n", // the key
            "    lea rdi, [rip + {table}]\n",
            "    lea rax, [rdi + {entries} * {entry_len}]\n",
            "4:  mov r8, [rdi]\n",
            "    cmp r8, rsi\n",
            "    je 6f\n",
            "    test r8, r8\n",
            "    jz 5f\n",
            "    add rdi, {entry_len}\n",
            "    cmp rdi, rax\n",
            "    jb 4b\n",
            "5:  mov rax, rsi\n", // not there: CPUID, then keep the answer
            "    not rax\n",
            "    shr rax, 32\n",
            "    mov edi, eax\n",
            "    cpuid\n",
            "    cmp edi, 1\n",   // not kept for the APIC-ID leaves (only the monitor's entries are
            "    je 12f\n",       // the same on every CPU but for the field the stub puts in), but
            "    cmp edi, 0xb\n", // given this CPU's ID as a table answer is
            "    je 13f\n",
            "    cmp edi, 0x1f\n",
            "    je 13f\n",
            "    mov r8d, 1\n",
            "    lock xadd [rip + {used}], r8\n",
            "    cmp r8, {entries}\n",
            "    jae 9f\n",
            "    shl r8, 5\n",
            "    lea rdi, [rip + {table}]\n",
            "    mov [rdi + r8 + 8], eax\n",
            "    mov [rdi + r8 + 12], ebx\n",
            "    mov [rdi + r8 + 16], ecx\n",
            "    mov [rdi + r8 + 20], edx\n",
            "    mov [rdi + r8], rsi\n",
            "    jmp 9f\n",
            "6:  mov eax, [rdi + 8]\n",
            "    mov ebx, [rdi + 12]\n",
            "    mov ecx, [rdi + 16]\n",
            "    mov edx, [rdi + 20]\n",
            "    not rsi\n", // the leaf (high half of the key)
            "    shr rsi, 32\n",
            "    cmp esi, 1\n",
            "    jne 7f\n",
            "    mov rdi, gs:[{cpu_id}]\n", // leaf 1: this CPU's APIC ID in EBX bits 24-31
            "    shl edi, 24\n",
            "    and ebx, 0x00ffffff\n",
            "    or ebx, edi\n",
            "    jmp 10f\n",
            "7:  cmp esi, 0xb\n",
            "    je 11f\n",
            "    cmp esi, 0x1f\n",
            "    jne 10f\n",
            "11: mov edx, gs:[{cpu_id}]\n", // leaves 0xb, 0x1f: its x2APIC ID in EDX
            "10: mfence\n",
            "    lfence\n",
            "    jmp 9f\n",
            "12: mov rdi, gs:[{cpu_id}]\n",
            "    shl edi, 24\n",
            "    and ebx, 0x00ffffff\n",
            "    or ebx, edi\n",
            "    jmp 9f\n",
            "13: mov edx, gs:[{cpu_id}]\n",
            "    jmp 9f\n",
            "8:  mov eax, r8d\n",
            "    cpuid\n",
            "9:  pop r8\n",
            "    pop rdi\n",
            "    pop rsi\n",
            "    popfq\n",
            "    ret\n",
            ".global hrt_cpuid_stub_end\n",
            "hrt_cpuid_stub_end:\n",
        )
    };
}
pub(super) use cpuid_stub_asm;

const _: () = assert!(ENTRY_LEN == 1 << 5);

extern "C" {
    fn hrt_cpuid_stub();
    fn hrt_cpuid_stub_end();
}

/// Where rewritten CPUID sites' slots jump (the stub, in the user page).
pub fn stub_address() -> u64 {
    hrt_cpuid_stub as *const () as u64
}

/// True if the stub lies wholly in the user page starting at `page` (checked at boot).
pub fn stub_within(page: u64) -> bool {
    (page..page + 4096).contains(&stub_address()) && (hrt_cpuid_stub_end as *const () as u64) <= page + 4096
}
