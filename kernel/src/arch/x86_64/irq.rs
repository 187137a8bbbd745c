//! Local interrupt enable/disable.

use core::arch::asm;

const RFLAGS_IF: u64 = 1 << 9;

#[inline(always)]
pub fn enabled() -> bool {
    let flags: u64;
    // SAFETY: pushfq/pop only reads RFLAGS through the stack.
    unsafe { asm!("pushfq; pop {}", out(reg) flags, options(nomem, preserves_flags)) };
    flags & RFLAGS_IF != 0
}

#[inline(always)]
pub fn disable() {
    // SAFETY: masking interrupts on this CPU is always allowed in the kernel.
    unsafe { asm!("cli", options(nomem, nostack)) };
}

#[inline(always)]
pub fn enable() {
    // SAFETY: the kernel enables interrupts only once its IDT is loaded.
    unsafe { asm!("sti", options(nomem, nostack)) };
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
