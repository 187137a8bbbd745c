//! The local APIC: x2APIC through MSRs when offered, xAPIC through MMIO otherwise.
//! Provides IPIs (one CPU, a set, all others), end-of-interrupt, and a one-shot timer
//! (TSC-deadline when offered, else the APIC count-down timer calibrated against the TSC).

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::instr::{rdmsr, rdtsc, wrmsr, MSR_APIC_BASE};

pub const TIMER_VECTOR: u8 = 0xf0;
/// Wakes a halted CPU so it looks at its run queue (the condition-variable "kick").
pub const KICK_VECTOR: u8 = 0xf1;
pub const SPURIOUS_VECTOR: u8 = 0xff;

/// The xAPIC MMIO window (identity-mapped uncached by `paging`).
pub const XAPIC_BASE: u64 = 0xfee0_0000;

/// Read by the ring-3 entry's acknowledging fast path (`ring3::trap_ring3_relocate`) too.
pub(super) static X2APIC: AtomicBool = AtomicBool::new(false);
static TSC_DEADLINE: AtomicBool = AtomicBool::new(false);
/// APIC timer ticks per 1024 TSC cycles (count-down mode only).
static TICKS_PER_1K_TSC: AtomicU64 = AtomicU64::new(0);

// Register indices (xAPIC offset >> 4; x2APIC MSR = 0x800 + index).
const REG_ID: u32 = 0x02;
const REG_EOI: u32 = 0x0b;
const REG_SVR: u32 = 0x0f;
const REG_ICR: u32 = 0x30;
const REG_ICR_HIGH: u32 = 0x31;
const REG_LVT_TIMER: u32 = 0x32;
const REG_TIMER_INIT: u32 = 0x38;
const REG_TIMER_CURRENT: u32 = 0x39;
const REG_TIMER_DIVIDE: u32 = 0x3e;

const ICR_PENDING: u64 = 1 << 12;
const ICR_ALL_BUT_SELF: u64 = 0b11 << 18;
const LVT_MASKED: u32 = 1 << 16;
const LVT_TSC_DEADLINE: u32 = 0b10 << 17;

/// Reads APIC register `reg` (in ring 0; see `ring3::privileged`).
fn read(reg: u32) -> u64 {
    super::ring3::privileged(read_ring0, reg as u64, 0, 0)
}

/// Writes APIC register `reg` (in ring 0).
fn write(reg: u32, value: u64) {
    super::ring3::privileged(write_ring0, reg as u64, value, 0);
}

extern "C" fn read_ring0(reg: u64, _: u64, _: u64) -> u64 {
    read_direct(reg as u32)
}

extern "C" fn write_ring0(reg: u64, value: u64, _: u64) -> u64 {
    write_direct(reg as u32, value);
    0
}

fn read_direct(reg: u32) -> u64 {
    if X2APIC.load(Ordering::Relaxed) {
        rdmsr(0x800 + reg)
    } else {
        // SAFETY: the xAPIC page is mapped and `reg` is a valid register offset.
        unsafe { core::ptr::read_volatile((XAPIC_BASE + ((reg as u64) << 4)) as *const u32) as u64 }
    }
}

fn write_direct(reg: u32, value: u64) {
    if X2APIC.load(Ordering::Relaxed) {
        // SAFETY: x2APIC registers are MSRs 0x800+; writing them only affects the local APIC.
        unsafe { wrmsr(0x800 + reg, value) };
    } else {
        // SAFETY: the xAPIC page is mapped and `reg` is a valid register offset.
        unsafe { core::ptr::write_volatile((XAPIC_BASE + ((reg as u64) << 4)) as *mut u32, value as u32) };
    }
}

/// Decides the APIC mode; called once by the boot CPU before `init_cpu` anywhere.
pub fn detect() {
    use super::features::{has, TSC_DEADLINE as DEADLINE, X2APIC as X2};
    X2APIC.store(has(X2), Ordering::Relaxed);
    TSC_DEADLINE.store(has(DEADLINE), Ordering::Relaxed);
}

pub fn is_x2apic() -> bool {
    X2APIC.load(Ordering::Relaxed)
}

pub fn has_tsc_deadline() -> bool {
    TSC_DEADLINE.load(Ordering::Relaxed)
}

/// Enables this CPU's local APIC and installs the timer, kick and spurious vectors.
/// Runs in ring 0 (it writes MSRs): its register writes go straight to the APIC, not through
/// `write`'s ring check, since on a PVM host each of those instructions is emulated.
pub fn init_cpu() {
    let x2apic = is_x2apic();
    let deadline = has_tsc_deadline();
    let mut base = rdmsr(MSR_APIC_BASE) | (1 << 11);
    if x2apic {
        base |= 1 << 10;
    }
    // SAFETY: enabling the local APIC (and x2APIC mode where CPUID offers it).
    unsafe { wrmsr(MSR_APIC_BASE, base) };
    let mode = if deadline { LVT_TSC_DEADLINE } else { 0 };
    if x2apic {
        // SAFETY: x2APIC registers are MSRs 0x800+; these only configure this CPU's APIC.
        unsafe {
            wrmsr(0x800 + REG_SVR, 0x100 | SPURIOUS_VECTOR as u64);
            wrmsr(0x800 + REG_LVT_TIMER, (mode | TIMER_VECTOR as u32) as u64);
        }
    } else {
        write_direct(REG_SVR, 0x100 | SPURIOUS_VECTOR as u64);
        write_direct(REG_LVT_TIMER, (mode | TIMER_VECTOR as u32) as u64);
    }
    if !deadline {
        write(REG_TIMER_DIVIDE, 0b1011); // divide by 1
        if TICKS_PER_1K_TSC.load(Ordering::Relaxed) == 0 {
            calibrate();
        }
    }
}

/// Measures the count-down timer against the TSC (only without TSC-deadline mode).
fn calibrate() {
    write(REG_LVT_TIMER, (LVT_MASKED | TIMER_VECTOR as u32) as u64);
    write(REG_TIMER_INIT, u32::MAX as u64);
    let t0 = rdtsc();
    while rdtsc() - t0 < 1 << 20 {
        core::hint::spin_loop();
    }
    let elapsed = rdtsc() - t0;
    let ticks = u32::MAX as u64 - read(REG_TIMER_CURRENT);
    TICKS_PER_1K_TSC.store((ticks * 1024 / elapsed).max(1), Ordering::Relaxed);
    write(REG_TIMER_INIT, 0);
    write(REG_LVT_TIMER, TIMER_VECTOR as u64);
}

/// This CPU's APIC ID.
pub fn id() -> u32 {
    let v = read(REG_ID);
    if is_x2apic() {
        v as u32
    } else {
        (v >> 24) as u32
    }
}

pub fn eoi() {
    crate::arch::counters::add(crate::arch::counters::Stat::Eois, 1);
    write(REG_EOI, 0);
}

/// The x2APIC's interrupt command register (MSR 0x800 + `REG_ICR`).
pub const X2APIC_ICR_MSR: u32 = 0x800 + REG_ICR;

fn send_icr(dest: u32, low: u64) {
    if is_x2apic() && !super::ring3::in_ring0() {
        super::ring3::send_x2apic_icr(((dest as u64) << 32) | low);
        return;
    }
    super::ring3::privileged(send_icr_ring0, dest as u64, low, 0);
}

extern "C" fn send_icr_ring0(dest: u64, low: u64, _: u64) -> u64 {
    if is_x2apic() {
        write_direct(REG_ICR, (dest << 32) | low);
    } else {
        while read_direct(REG_ICR) & ICR_PENDING != 0 {
            core::hint::spin_loop();
        }
        write_direct(REG_ICR_HIGH, dest << 24);
        write_direct(REG_ICR, low);
    }
    0
}

/// Sends `vector` to the CPU whose APIC ID is `apic_id` (fixed delivery, physical mode).
pub fn send_ipi(apic_id: u32, vector: u8) {
    send_icr(apic_id, vector as u64);
}

/// Sends `vector` to every CPU but this one.
pub fn send_ipi_all_others(vector: u8) {
    send_icr(0, ICR_ALL_BUT_SELF | vector as u64);
}

/// What an arm typically costs in TSC ticks (see `arm_ticks`).
static ARM_TICKS: AtomicU64 = AtomicU64::new(0);

/// Arms this CPU's one-shot timer to fire at TSC value `deadline` (0 disarms).
pub fn set_deadline(deadline: u64) {
    crate::arch::counters::add(crate::arch::counters::Stat::Deadlines, 1);
    let t0 = rdtsc();
    if has_tsc_deadline() {
        super::ring3::set_tsc_deadline(deadline);
    } else {
        super::ring3::privileged(set_deadline_ring0, deadline, 0, 0);
    }
    note_arm_ticks(rdtsc().wrapping_sub(t0));
}

/// A running estimate of an arm's cost: an average of the samples, each capped at twice the
/// estimate (an arm the host preempted, or one that an interrupt noted in ring 0 lengthened,
/// moves it little).
fn note_arm_ticks(sample: u64) {
    let old = ARM_TICKS.load(Ordering::Relaxed);
    let new = if old == 0 { sample } else { old - old / 8 + sample.min(2 * old) / 8 };
    ARM_TICKS.store(new, Ordering::Relaxed);
}

/// About how many TSC ticks arming the timer takes (a write of the TSC-deadline MSR: a few
/// hundred on hardware, ~70 K on this project's PVM hosts, where it is an emulated ring-0
/// entry). A deadline nearer than that passes during the arm itself, and its interrupt then
/// comes in the kernel code that armed it, not in what runs after.
pub fn arm_ticks() -> u64 {
    ARM_TICKS.load(Ordering::Relaxed)
}

/// The one-shot count-down timer's `set_deadline` (no TSC-deadline mode), in ring 0.
extern "C" fn set_deadline_ring0(deadline: u64, _: u64, _: u64) -> u64 {
    if deadline == 0 {
        write_direct(REG_TIMER_INIT, 0);
        return 0;
    }
    let now = rdtsc();
    let delta = deadline.saturating_sub(now).max(1);
    let ticks = (delta as u128 * TICKS_PER_1K_TSC.load(Ordering::Relaxed) as u128 / 1024).clamp(1, u32::MAX as u128);
    write_direct(REG_TIMER_INIT, ticks as u64);
    0
}
