//! Per-CPU data through the GS base: GS:0 holds a pointer to this CPU's `super::cpu::PerCpu`,
//! GS:8 its CPU index. Reading either costs one instruction and needs no lock.

use core::arch::asm;

use super::instr::{wrmsr, MSR_GS_BASE};

/// Offsets of the fields the assembly below (and later entry paths) read through GS.
pub const OFF_SELF: usize = 0;
pub const OFF_CPU_ID: usize = 8;
pub const OFF_KERNEL_RSP: usize = 16;
pub const OFF_USER_RSP: usize = 24;
/// The software interrupt flag of ring-3 mode (`super::cpu::PerCpu::irq_off`).
pub const OFF_IRQ_OFF: usize = 32;
/// Ring-3 mode: the interrupts noted while masked, four words (`PerCpu::irq_pending`).
pub const OFF_IRQ_PENDING: usize = 40;
/// The running thread (`super::cpu::PerCpu::current_thread`).
pub const OFF_CURRENT_THREAD: usize = 80;
/// Plain spinlocks held (`super::cpu::PerCpu::spinlocks_held`).
pub const OFF_SPINLOCKS_HELD: usize = 88;
/// Where the last interrupt noted while masked found the CPU (`PerCpu::noted_rip`).
pub const OFF_NOTED_RIP: usize = 96;
/// Interrupts the ring-0 short paths noted for later (`PerCpu::noted_irqs`), and those that
/// they deferred to ring 3 (`PerCpu::deferred_irqs`): counted with one instruction there.
pub const OFF_NOTED_IRQS: usize = 104;
pub const OFF_DEFERRED_IRQS: usize = 112;
/// Scratch for the flags of a system call entered by a rewritten call
/// (`ring3::syscall_entry`: pushed there, popped into r11 at once).
pub const OFF_ENTRY_FLAGS: usize = 120;
/// A constant the ring-3 entries compare first (`PerCpu::magic`): a sign-extended imm32.
pub const OFF_MAGIC: usize = 128;
pub const MAGIC: i32 = 0x4852_5447;

/// # Safety
/// `base` must point to this CPU's `PerCpu`, which lives forever and starts with the fields
/// at the offsets above.
pub unsafe fn set_base(base: u64) {
    // SAFETY: forwarded to the caller's contract.
    unsafe { wrmsr(MSR_GS_BASE, base) };
}

/// This CPU's index (0 .. number of CPUs).
#[inline(always)]
pub fn cpu_id() -> usize {
    let id: usize;
    // SAFETY: GS is set up before any code that can call this runs (first thing at entry).
    unsafe {
        asm!("mov {}, gs:[{off}]", out(reg) id, off = const OFF_CPU_ID, options(nostack, readonly, preserves_flags))
    };
    id
}

/// The running thread's record, as the scheduler last set it (0 before it ran one).
#[inline(always)]
pub fn current_thread() -> usize {
    let p: usize;
    // SAFETY: as for `cpu_id`.
    unsafe {
        asm!("mov {}, gs:[{off}]", out(reg) p, off = const OFF_CURRENT_THREAD, options(nostack, readonly, preserves_flags))
    };
    p
}

/// Address of this CPU's `PerCpu`.
#[inline(always)]
pub fn self_ptr() -> usize {
    let p: usize;
    // SAFETY: as for `cpu_id`.
    unsafe {
        asm!("mov {}, gs:[{off}]", out(reg) p, off = const OFF_SELF, options(nostack, readonly, preserves_flags))
    };
    p
}

/// Adds `delta` to this CPU's count of plain spinlocks held, in one instruction: neither an
/// interrupt nor a preemption that moves the thread to another CPU can come between finding
/// this CPU's record and writing it (no lock prefix needed: only this CPU writes its count).
#[inline(always)]
pub fn add_spinlocks_held(delta: i64) {
    // SAFETY: GS:OFF_SPINLOCKS_HELD is this CPU's `PerCpu::spinlocks_held` (asserted in cpu.rs).
    unsafe {
        asm!("add qword ptr gs:[{off}], {d}", d = in(reg) delta, off = const OFF_SPINLOCKS_HELD, options(nostack))
    };
}
