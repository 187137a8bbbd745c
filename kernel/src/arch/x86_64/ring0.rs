//! Programs in ring 0 (`--app-ring 0`, the hybrid-runtime model where guest ring 0 is native).
//!
//! Two things differ from ring 3, and both are about the program's stack:
//! - SYSCALL from ring 0 does not switch stacks; `syscall_entry_ring0` moves to the thread's
//!   kernel stack itself (no SWAPGS: GS is always the kernel's while a ring-0 program runs).
//! - An interrupt or exception at the same privilege level pushes its frame onto the current
//!   stack, which would overwrite the 128-byte red zone below the program's stack pointer that
//!   the x86-64 ABI lets leaf functions use. So every gate that has no IST of its own runs on
//!   the `IST_PROGRAM` stack, whose stub (`trap_ring0_relocate`) copies the frame at once to the
//!   thread's kernel stack when the program was interrupted (stack pointer inside the program's
//!   memory pool), or just below the interrupted kernel stack pointer otherwise, and joins the
//!   common trap path. Interrupt gates keep IF clear until the copy is done, so the IST stack is
//!   never in use twice.
//!
//! Returns are IRETQ to CPL 0, which restores RSP and RFLAGS with RIP (never SYSRET).

use core::arch::naked_asm;
use core::sync::atomic::{AtomicU64, Ordering};

use super::gdt::{KERNEL_CS, KERNEL_SS};
use super::syscall::OFF_KERNEL_RSP;
use super::traps::TrapFrame;

/// The program's memory pool [lo, hi): a stack pointer inside it belongs to the program.
pub(super) static POOL_LO: AtomicU64 = AtomicU64::new(0);
pub(super) static POOL_HI: AtomicU64 = AtomicU64::new(0);

/// True if this boot runs a program in ring 0.
pub fn active() -> bool {
    let boot = crate::bootinfo::get();
    boot.program.size != 0 && boot.app_ring == 0
}

/// Records the program's memory pool; called once at boot, before any CPU enables interrupts.
pub fn init(boot: &hrt_abi::BootInfo) {
    POOL_LO.store(boot.user_pool.base, Ordering::Relaxed);
    POOL_HI.store(boot.user_pool.base + boot.user_pool.size, Ordering::Relaxed);
}

/// True if `frame` interrupted the ring-0 program (its stack is program memory).
pub fn interrupted_program(frame: &TrapFrame) -> bool {
    frame.cs & 3 == 0 && (POOL_LO.load(Ordering::Relaxed)..POOL_HI.load(Ordering::Relaxed)).contains(&frame.rsp)
}

/// The selectors a ring-0 program runs with: (CS, SS).
pub const SELECTORS: (u16, u16) = (KERNEL_CS, KERNEL_SS);

// Entry stubs for the IST gates: the same shape as idt.rs's (error code, vector), 16 bytes each.
super::idt::isr_stub_table!(isr_stubs_ring0, trap_ring0_relocate);

/// Moves a trap frame from the IST stack to the stack the trap belongs on (see the module
/// comment), then continues in `trap_common` after its SWAPGS test (GS is the kernel's).
#[unsafe(naked)]
unsafe extern "C" fn trap_ring0_relocate() {
    naked_asm!(
        // [rsp] rbx, +8 rax, +16 vector, +24 error, +32 rip, +40 cs, +48 rflags, +56 rsp, +64 ss
        "push rax",
        "push rbx",
        "mov rax, [rsp + 56]",
        "cmp rax, [rip + {lo}]",
        "jb 1f",
        "cmp rax, [rip + {hi}]",
        "jae 1f",
        "mov rbx, gs:[{kernel_rsp}]",
        "jmp 2f",
        "1:",
        "lea rbx, [rax - 128]",
        "and rbx, -16",
        "2:",
        "sub rbx, 72",
        super::idt::copy_entry_frame_asm!(),
        "mov rsp, rbx",
        "pop rbx",
        "pop rax",
        "jmp hrt_trap_save",
        lo = sym POOL_LO,
        hi = sym POOL_HI,
        kernel_rsp = const OFF_KERNEL_RSP,
    );
}

/// Where SYSCALL from a ring-0 program lands: the CPU changed neither stack nor GS (GS is
/// the kernel's already), so no SWAPGS; CPL-0 selectors in the frame.
///
/// # Safety
/// Only the CPU calls it, through LSTAR.
#[unsafe(naked)]
pub unsafe extern "C" fn syscall_entry_ring0() {
    super::syscall::syscall_entry_asm!(switched: [] ss = KERNEL_SS, cs = KERNEL_CS);
}
