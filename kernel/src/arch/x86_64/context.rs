//! Thread context switch. A suspended thread's stack holds its callee-saved registers and the
//! return address into `switch`; the thread record keeps only the stack pointer.
//!
//! In ring-3 mode (`ring3`) a switch made in ring 0 (preemption from an interrupt handler)
//! continues the next thread in ring 3: kernel code runs in either ring, and ring 3 is the
//! one that costs nothing there.

use super::gdt::{USER_CS, USER_SS};

/// Saves callee-saved registers on the current stack, stores rsp in `*save_rsp`, loads
/// `next_rsp` and pops the next thread's registers. Returns when the old thread is resumed.
///
/// # Safety
/// `next_rsp` must come from an earlier `switch` or `prepare_stack`; interrupts must be off.
#[unsafe(naked)]
pub unsafe extern "C" fn switch(save_rsp: *mut u64, next_rsp: u64) {
    core::arch::naked_asm!(
        "push rbp",
        "push rbx",
        "push r12",
        "push r13",
        "push r14",
        "push r15",
        "mov [rdi], rsp",
        "mov rsp, rsi",
        "cmp byte ptr [rip + {ring3}], 0",
        "je 1f",
        "mov ax, cs",
        "test al, 3",
        "jnz 1f",
        super::ring3::drop_to_ring3_asm!(),
        "1:",
        "pop r15",
        "pop r14",
        "pop r13",
        "pop r12",
        "pop rbx",
        "pop rbp",
        "ret",
        ring3 = sym super::ring3::KERNEL_RING3,
        ss = const USER_SS as u64,
        cs = const USER_CS as u64,
    );
}

/// First code of every new thread: `prepare_stack` left the entry function in r12 and its
/// argument in r13.
#[unsafe(naked)]
unsafe extern "C" fn thread_trampoline() {
    core::arch::naked_asm!("mov rdi, r13", "call r12", "ud2",);
}

/// Builds the initial frame of a new thread on a fresh stack so that the first `switch` to it
/// calls `entry(arg)`; returns the stack pointer to store in the thread record.
///
/// # Safety
/// `stack_top` must be the 16-byte aligned top of writable memory of at least 128 bytes.
pub unsafe fn prepare_stack(stack_top: u64, entry: extern "C" fn(u64) -> !, arg: u64) -> u64 {
    let frame = [
        0u64,                                  // r15
        0,                                     // r14
        arg,                                   // r13
        entry as *const () as u64,             // r12
        0,                                     // rbx
        0,                                     // rbp
        thread_trampoline as *const () as u64, // return address of `switch`
        0,                                     // padding: rsp is 16-byte aligned
        0,                                     // at `call r12` (top - 16)
    ];
    let rsp = stack_top - (frame.len() as u64) * 8;
    // SAFETY: the caller guarantees the memory below stack_top is ours.
    unsafe { core::ptr::copy_nonoverlapping(frame.as_ptr(), rsp as *mut u64, frame.len()) };
    rsp
}
