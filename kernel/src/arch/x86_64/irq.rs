//! Local interrupt enable/disable: the CPU's interrupt flag (CLI/STI) with the kernel in ring 0,
//! a per-CPU software flag with the kernel in ring 3 (where CLI/STI fault; see `ring3`).
//! Interrupts that arrive while the software flag masks them are held as pending bits and
//! handled when the flag is cleared, as the hardware would deliver them after STI.

use core::arch::asm;
use core::sync::atomic::Ordering;

const RFLAGS_IF: u64 = 1 << 9;

#[inline(always)]
fn soft() -> bool {
    super::ring3::active()
}

#[inline(always)]
pub fn enabled() -> bool {
    if soft() {
        return super::cpu::this().irq_off.load(Ordering::Relaxed) == 0;
    }
    let flags: u64;
    // SAFETY: pushfq/pop only reads RFLAGS through the stack.
    unsafe { asm!("pushfq; pop {}", out(reg) flags, options(nomem, preserves_flags)) };
    flags & RFLAGS_IF != 0
}

#[inline(always)]
pub fn disable() {
    if soft() {
        super::cpu::this().irq_off.store(1, Ordering::Relaxed);
        core::sync::atomic::compiler_fence(Ordering::SeqCst);
        return;
    }
    // SAFETY: masking interrupts on this CPU is always allowed in the kernel.
    unsafe { asm!("cli", options(nomem, nostack)) };
}

#[inline(always)]
pub fn enable() {
    if soft() {
        core::sync::atomic::compiler_fence(Ordering::SeqCst);
        let cpu = super::cpu::this();
        cpu.irq_off.store(0, Ordering::Relaxed);
        if pending(cpu) {
            super::traps::run_deferred();
        }
        return;
    }
    // SAFETY: the kernel enables interrupts only once its IDT is loaded.
    unsafe { asm!("sti", options(nomem, nostack)) };
}

/// Ring-3 mode, on a CPU about to drop to ring 3 from its boot in ring 0: clears the software
/// mask the boot set (`disable`) without handling anything noted (nothing is, with ring 0's
/// own interrupt flag clear throughout; the first `enable` in ring 3 would).
///
/// The mask is set while a CPU boots in ring 0 so that every lock and hypercall there skips
/// its unmask and the look for deferred interrupts: ~650 of the ~7,500 instructions of a boot
/// that a PVM host emulates one by one.
pub fn unmask_for_ring3() {
    if soft() {
        super::cpu::this().irq_off.store(0, Ordering::Relaxed);
    }
}

/// Whether an interrupt that arrives while interrupts are masked, a halt included, is only
/// noted in the CPU's own pending bits (ring-3 mode), so that its handler runs when the code
/// unmasks: then a CPU halted with interrupts masked writes nothing shared when woken before
/// it unmasks (`sched::freeze`). In ring 0 `wait_for_interrupt` halts with interrupts enabled.
pub fn noted_while_masked() -> bool {
    soft()
}

/// True if interrupts wait for this CPU's software flag to clear.
#[inline(always)]
pub fn pending(cpu: &super::cpu::PerCpu) -> bool {
    cpu.irq_pending.iter().any(|w| w.load(Ordering::Relaxed) != 0)
}

/// Disables interrupts and returns whether they were enabled.
#[inline(always)]
pub fn save_and_disable() -> bool {
    let was = enabled();
    if was {
        disable();
    }
    was
}

#[inline(always)]
pub fn restore(were_enabled: bool) {
    if were_enabled {
        enable();
    }
}

/// Called with interrupts disabled: enables them and waits until one arrives (at once if one
/// is already pending). In ring-3 mode the halt happens in ring 0 and the interrupt is only
/// noted; `enable` (which the caller runs next) handles it.
pub fn wait_for_interrupt() {
    if soft() {
        if super::ring3::in_ring0() {
            halt_ring0(0, 0, 0);
        } else {
            super::ring3::halt_unless_pending();
        }
        return;
    }
    super::instr::enable_and_hlt();
}

/// Ring 0, hardware interrupts off: halts unless an interrupt is already noted; the `sti; hlt`
/// pair lets none slip in between the check and the halt.
extern "C" fn halt_ring0(_: u64, _: u64, _: u64) -> u64 {
    if !pending(super::cpu::this()) {
        super::instr::enable_and_hlt();
        // SAFETY: back to the masked state this ring-0 call started in.
        unsafe { asm!("cli", options(nomem, nostack)) };
    }
    0
}
