//! Thin wrappers around single privileged or special instructions.

use core::arch::asm;

pub const MSR_APIC_BASE: u32 = 0x1b;
pub const MSR_TSC_DEADLINE: u32 = 0x6e0;
pub const MSR_EFER: u32 = 0xc000_0080;
pub const MSR_STAR: u32 = 0xc000_0081;
pub const MSR_LSTAR: u32 = 0xc000_0082;
pub const MSR_FMASK: u32 = 0xc000_0084;
pub const MSR_FS_BASE: u32 = 0xc000_0100;
pub const MSR_GS_BASE: u32 = 0xc000_0101;
pub const MSR_KERNEL_GS_BASE: u32 = 0xc000_0102;

#[inline(always)]
pub fn rdmsr(msr: u32) -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: reading an MSR has no memory effects; callers only name MSRs the CPU has.
    unsafe { asm!("rdmsr", in("ecx") msr, out("eax") lo, out("edx") hi, options(nomem, nostack)) };
    ((hi as u64) << 32) | lo as u64
}

/// # Safety
/// Writing an MSR can change how the CPU behaves; the caller knows what `msr` controls.
#[inline(always)]
pub unsafe fn wrmsr(msr: u32, value: u64) {
    // SAFETY: forwarded to the caller's contract.
    unsafe {
        asm!("wrmsr", in("ecx") msr, in("eax") value as u32, in("edx") (value >> 32) as u32,
             options(nostack))
    };
}

/// The TSC, read after every earlier load has completed (LFENCE first, as Linux's
/// `rdtsc_ordered`): a time a program sees. A bare RDTSC may execute before an earlier load,
/// so a thread that reads another thread's time stamp and then the clock could get an older
/// time than the one it read (CLOCK_MONOTONIC going back 5-25 ns across vCPUs).
#[inline(always)]
pub fn rdtsc_ordered() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: lfence only orders; rdtsc only reads the time-stamp counter.
    unsafe { asm!("lfence", "rdtsc", out("eax") lo, out("edx") hi, options(nostack, preserves_flags)) };
    ((hi as u64) << 32) | lo as u64
}

#[inline(always)]
pub fn rdtsc() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: rdtsc only reads the time-stamp counter.
    unsafe { asm!("rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack)) };
    ((hi as u64) << 32) | lo as u64
}

#[inline(always)]
pub fn read_cr0() -> u64 {
    let v: u64;
    // SAFETY: reading CR0 has no side effects.
    unsafe { asm!("mov {}, cr0", out(reg) v, options(nomem, nostack)) };
    v
}

/// # Safety
/// Changing CR0 changes CPU modes; the caller must keep paging and protection enabled.
#[inline(always)]
pub unsafe fn write_cr0(v: u64) {
    // SAFETY: forwarded to the caller's contract.
    unsafe { asm!("mov cr0, {}", in(reg) v, options(nostack)) };
}

#[inline(always)]
pub fn read_cr2() -> u64 {
    let v: u64;
    // SAFETY: reading CR2 has no side effects.
    unsafe { asm!("mov {}, cr2", out(reg) v, options(nomem, nostack)) };
    v
}

#[inline(always)]
pub fn read_cr3() -> u64 {
    let v: u64;
    // SAFETY: reading CR3 has no side effects.
    unsafe { asm!("mov {}, cr3", out(reg) v, options(nomem, nostack)) };
    v
}

/// # Safety
/// `pml4` must be the physical address of a valid top-level page table that maps the kernel.
#[inline(always)]
pub unsafe fn write_cr3(pml4: u64) {
    // SAFETY: forwarded to the caller's contract.
    unsafe { asm!("mov cr3, {}", in(reg) pml4, options(nostack)) };
}

#[inline(always)]
pub fn read_cr4() -> u64 {
    let v: u64;
    // SAFETY: reading CR4 has no side effects.
    unsafe { asm!("mov {}, cr4", out(reg) v, options(nomem, nostack)) };
    v
}

/// # Safety
/// Changing CR4 changes CPU modes; the caller must only set features the CPU offers.
#[inline(always)]
pub unsafe fn write_cr4(v: u64) {
    // SAFETY: forwarded to the caller's contract.
    unsafe { asm!("mov cr4, {}", in(reg) v, options(nostack)) };
}

/// Waits for an interrupt. Interrupts must be enabled by the caller (or by `sti` just before).
#[inline(always)]
pub fn hlt() {
    // SAFETY: hlt only pauses the CPU until the next interrupt.
    unsafe { asm!("hlt", options(nomem, nostack)) };
}

/// Enables interrupts and halts in one step: `sti` delays interrupt delivery by one
/// instruction, so no wake-up can slip in between the check before and the `hlt`.
#[inline(always)]
pub fn enable_and_hlt() {
    // SAFETY: see above; used by idle loops with interrupts disabled.
    unsafe { asm!("sti; hlt", options(nomem, nostack)) };
}

/// Executes `out dx, eax`.
#[inline(always)]
pub fn outl(port: u16, value: u32) {
    // SAFETY: the monitor owns every port; an `out` is a request to it.
    unsafe { asm!("out dx, eax", in("dx") port, in("eax") value, options(nostack)) };
}

pub fn cpuid(leaf: u32, sub: u32) -> (u32, u32, u32, u32) {
    let r = core::arch::x86_64::__cpuid_count(leaf, sub);
    (r.eax, r.ebx, r.ecx, r.edx)
}
