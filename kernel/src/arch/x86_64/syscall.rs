//! Ring-3 programs: the SYSCALL entry, the first entry into user mode, and the per-thread
//! state the CPU needs on the way in (kernel stack in TSS.rsp0 and GS, FS base for TLS).
//!
//! The return path is always IRETQ: SYSRETQ triple-faults on PVM hosts, and IRETQ also serves
//! returns after interrupts and signals with full register state.

use super::gdt::{KERNEL_CS, USER_CS, USER_SS};
use super::instr::{wrmsr, MSR_FMASK, MSR_FS_BASE, MSR_LSTAR, MSR_STAR};
use super::traps::TrapFrame;

/// `TrapFrame::vector` of a system call (not a real vector).
pub const SYSCALL_VECTOR: u64 = 0x100;

/// Offsets of `PerCpu::kernel_rsp` and `PerCpu::user_rsp` from GS.
pub const OFF_KERNEL_RSP: usize = 16;
pub const OFF_USER_RSP: usize = 24;

// On PVM hosts a non-PVM guest's SYSCALL from ring 3 jumps to LSTAR *without* entering
// supervisor mode (measured: the entry's first instruction then takes a user-mode page fault,
// error 0x5, on the supervisor page; clearing EFER.SCE changes nothing; a DPL-3 `int 0x81`
// there raises #UD). Exceptions do enter supervisor mode through the IDT, so on PVM LSTAR
// points at this one user-executable page, whose `ud2` the #UD handler recognises by its
// address as a system call.
core::arch::global_asm!(
    ".section .text.user_trampoline, \"ax\"",
    ".balign 4096",
    ".global hrt_user_syscall_trampoline",
    "hrt_user_syscall_trampoline:",
    "    ud2",
    ".balign 4096",
);

extern "C" {
    fn hrt_user_syscall_trampoline();
}

/// The 4 KiB page holding the trampoline (mapped user-executable by `paging`).
pub fn trampoline_page() -> u64 {
    hrt_user_syscall_trampoline as *const () as u64
}

/// Sets up SYSCALL on this CPU (EFER.SCE is set by the monitor).
pub fn init_cpu() {
    let via_trampoline = crate::boot::info().platform == hrt_abi::Platform::PvmEmulated as u32;
    let entry = if super::ring0::active() {
        super::ring0::syscall_entry_ring0 as *const () as u64
    } else if via_trampoline {
        trampoline_page()
    } else {
        syscall_entry as *const () as u64
    };
    // SAFETY: standard SYSCALL MSRs; the entry point handles every SYSCALL.
    unsafe {
        wrmsr(MSR_STAR, ((0x10u64) << 48) | ((KERNEL_CS as u64) << 32));
        wrmsr(MSR_LSTAR, entry);
        // Clear IF, TF, DF, AC and NT on entry.
        wrmsr(MSR_FMASK, 0x4_4700);
    }
}

/// The trampoline's #UD: a system call whose SYSCALL left rcx = return address and r11 =
/// flags. Returns straight to the program.
pub fn syscall_from_trampoline(frame: &mut TrapFrame) {
    // Make the frame look like a SYSCALL entry's first: clone copies it for the child.
    frame.rip = frame.rcx;
    frame.rflags = frame.r11 | 0x200;
    crate::linux::syscall::dispatch(frame);
}

/// The body of a SYSCALL entry: optional prologue lines (SWAPGS from ring 3), then save the
/// program's stack pointer, move to the thread's kernel stack, push the top of a `TrapFrame`
/// shaped like an interrupt's (with the given SS and CS) and join the common trap path, which
/// dispatches (vector `SYSCALL_VECTOR`) and returns with IRETQ.
macro_rules! syscall_entry_asm {
    ($($prologue:literal,)* ss = $ss:expr, cs = $cs:expr) => {
        core::arch::naked_asm!(
            $($prologue,)*
            "mov gs:[{user_rsp}], rsp",
            "mov rsp, gs:[{kernel_rsp}]",
            "push {ss}",
            "push qword ptr gs:[{user_rsp}]",
            "push r11",
            "push {cs}",
            "push rcx",
            "push 0",
            "push {vector}",
            "jmp hrt_trap_save",
            user_rsp = const $crate::arch::x86_64::syscall::OFF_USER_RSP,
            kernel_rsp = const $crate::arch::x86_64::syscall::OFF_KERNEL_RSP,
            ss = const $ss as u64,
            cs = const $cs as u64,
            vector = const $crate::arch::x86_64::syscall::SYSCALL_VECTOR,
        )
    };
}
pub(super) use syscall_entry_asm;

/// Where SYSCALL from ring 3 lands where it enters supervisor mode (hardware virtualization).
#[unsafe(naked)]
unsafe extern "C" fn syscall_entry() {
    syscall_entry_asm!("swapgs", ss = USER_SS, cs = USER_CS);
}

/// Enters ring 3 with the register state `frame` (copied to the top of this thread's kernel
/// stack, where later entries will build their frames too).
///
/// # Safety
/// `kernel_stack_top` must be the current thread's kernel stack top, and the frame's rip/rsp
/// must point into user-accessible memory.
pub unsafe fn return_to_user(frame: &TrapFrame, kernel_stack_top: u64) -> ! {
    let dst = (kernel_stack_top - core::mem::size_of::<TrapFrame>() as u64) as *mut TrapFrame;
    // SAFETY: the caller's contract; the frame is written below the stack top, above our own
    // frame (we are deep below it), and we never return.
    unsafe {
        super::irq::disable();
        dst.write(*frame);
        core::arch::asm!("mov rsp, {0}", "jmp hrt_trap_return", in(reg) dst, options(noreturn));
    }
}

/// A frame that starts program code at `rip` with stack `rsp`, interrupts on, other registers
/// 0, in ring 3 or (`--app-ring 0`) ring 0.
pub fn initial_user_frame(rip: u64, rsp: u64) -> TrapFrame {
    let (cs, ss) = if super::ring0::active() { super::ring0::SELECTORS } else { (USER_CS, USER_SS) };
    TrapFrame {
        r15: 0,
        r14: 0,
        r13: 0,
        r12: 0,
        r11: 0,
        r10: 0,
        r9: 0,
        r8: 0,
        rbp: 0,
        rdi: 0,
        rsi: 0,
        rdx: 0,
        rcx: 0,
        rbx: 0,
        rax: 0,
        vector: SYSCALL_VECTOR,
        error: 0,
        rip,
        cs: cs as u64,
        rflags: 0x202,
        rsp,
        ss: ss as u64,
    }
}

/// Installs the kernel stack that entries from ring 3 use on this CPU.
pub fn set_kernel_stack(top: u64) {
    let cpu = crate::cpu::this();
    cpu.kernel_rsp.store(top, core::sync::atomic::Ordering::Relaxed);
    // SAFETY: this CPU's own TSS; called with interrupts off during a switch.
    unsafe { (*cpu.tss.get()).rsp[0] = top };
}

/// Loads the FS base (the program's TLS pointer).
pub fn set_fs_base(base: u64) {
    // SAFETY: FS base only affects FS-relative accesses, which the kernel does not make.
    unsafe { wrmsr(MSR_FS_BASE, base) };
}
