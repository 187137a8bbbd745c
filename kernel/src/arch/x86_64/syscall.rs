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

pub use super::percpu::{OFF_KERNEL_RSP, OFF_USER_RSP};

// On PVM hosts a non-PVM guest's SYSCALL from ring 3 jumps to LSTAR *without* entering
// supervisor mode (measured: the entry's first instruction then takes a user-mode page fault,
// error 0x5, on the supervisor page; clearing EFER.SCE changes nothing; a DPL-3 `int 0x81`
// there raises #UD). Exceptions do enter supervisor mode through the IDT, so on PVM LSTAR
// points at this one user-executable page, whose `ud2` the #UD handler recognises by its
// address as a system call. The page also holds the stubs that rewritten CPUID sites and spin
// loops call (`cpuid_cache`, `spin_yield`), which must count as program code for the trap
// handlers.
core::arch::global_asm!(
    ".section .text.user_trampoline, \"ax\"",
    ".balign 4096",
    ".global hrt_user_syscall_trampoline",
    "hrt_user_syscall_trampoline:",
    "    ud2",
    super::cpuid_cache::cpuid_stub_asm!(),
    super::spin_yield::spin_yield_stub_asm!(),
    ".balign 4096",
    table = sym super::cpuid_cache::HRT_CPUID_TABLE,
    used = sym super::cpuid_cache::HRT_CPUID_USED,
    class = sym super::cpuid_cache::HRT_CPUID_CLASS,
    entries = const super::cpuid_cache::ENTRIES,
    entry_len = const super::cpuid_cache::ENTRY_LEN,
    cpu_id = const super::percpu::OFF_CPU_ID,
    ready = sym super::spin_yield::HRT_SPIN_YIELD_READY,
    last = sym super::spin_yield::HRT_SPIN_YIELD_LAST,
    round = const super::spin_yield::ROUND_TICKS,
    nr = const linux_raw_sys::general::__NR_sched_yield,
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
    let via_trampoline = crate::bootinfo::get().platform == hrt_abi::Platform::PvmEmulated as u32;
    let entry = if super::ring3::active() {
        super::ring3::syscall_entry_address()
    } else if super::ring0::active() {
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
        // Clear IF, TF, DF, AC and NT on entry; in ring-3 mode not IF: PVM emulates SYSCALL
        // and would clear the guest's virtual IF, which nothing in ring 3 can set again (the
        // entry masks interrupts with the software flag instead).
        let mask = if super::ring3::active() { 0x4_4500 } else { 0x4_4700 };
        wrmsr(MSR_FMASK, mask);
    }
}

/// The trampoline's #UD: a system call whose SYSCALL left rcx = return address and r11 =
/// flags. Returns straight to the program.
pub fn syscall_from_trampoline(frame: &mut TrapFrame) {
    // Make the frame look like a SYSCALL entry's first: clone copies it for the child.
    frame.rip = frame.rcx;
    frame.rflags = frame.r11 | 0x200;
    super::traps::syscall(frame);
}

/// The body of a SYSCALL entry: optional prologue lines (SWAPGS from ring 3), then save the
/// program's stack pointer, move to the thread's kernel stack, run the `switched` lines, push
/// the top of a `TrapFrame` shaped like an interrupt's (with the given SS and CS) and join the
/// common trap path, which dispatches (vector `SYSCALL_VECTOR`) and returns with IRETQ.
macro_rules! syscall_entry_asm {
    ($($prologue:literal,)* switched: [$($switched:literal,)*] ss = $ss:expr, cs = $cs:expr) => {
        core::arch::naked_asm!(
            $($prologue,)*
            "mov gs:[{user_rsp}], rsp",
            "mov rsp, gs:[{kernel_rsp}]",
            $($switched,)*
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
    syscall_entry_asm!("swapgs", switched: [] ss = USER_SS, cs = USER_CS);
}

/// Makes system call `nr` (no arguments) with a SYSCALL instruction from where the caller runs,
/// as the program makes its calls: it goes in and out by the program's path, whose way back
/// delivers the signals pending for the thread, with their handler frames on the current stack
/// (for code that runs on the program's stack and behalf, the OpenMP runtime's waits).
pub fn call_as_program(nr: u64) -> u64 {
    let ret: u64;
    // SAFETY: SYSCALL enters the kernel's own entry (LSTAR), which saves every register but
    // rax (the result), rcx and r11 (the return address and flags), as Linux's does, and comes
    // back to the next instruction; it may push below the stack pointer (no `nostack`).
    unsafe { core::arch::asm!("syscall", inlateout("rax") nr => ret, out("rcx") _, out("r11") _) };
    ret
}

/// Where the program's registers lie while a user thread whose kernel stack ends at
/// `kernel_stack_top` is in the kernel (every entry from the program builds its frame there).
pub fn user_frame(kernel_stack_top: u64) -> *mut TrapFrame {
    (kernel_stack_top - core::mem::size_of::<TrapFrame>() as u64) as *mut TrapFrame
}

/// Enters ring 3 with the register state `frame` (copied to the top of this thread's kernel
/// stack, where later entries will build their frames too).
///
/// # Safety
/// `kernel_stack_top` must be the current thread's kernel stack top, and the frame's rip/rsp
/// must point into user-accessible memory.
pub unsafe fn return_to_user(frame: &TrapFrame, kernel_stack_top: u64) -> ! {
    let dst = user_frame(kernel_stack_top);
    // SAFETY: the caller's contract; the frame is written below the stack top, above our own
    // frame (we are deep below it), and we never return.
    unsafe {
        super::irq::disable();
        dst.write(*frame);
        if super::ring3::active() {
            // The program runs with interrupts enabled; in ring-3 mode nothing on the way out
            // (an IRETQ within ring 3) restores the flag from the frame. An interrupt from
            // here on finds kernel code and puts its frame below this one.
            super::irq::enable();
        }
        core::arch::asm!("mov rsp, {0}", "jmp hrt_trap_return", in(reg) dst, options(noreturn));
    }
}

/// A frame that starts program code at `rip` with stack `rsp`, interrupts on, other registers
/// 0, in ring 3 or (`--app-ring 0`) ring 0.
pub fn initial_user_frame(rip: u64, rsp: u64) -> TrapFrame {
    let (cs, ss) = if super::ring0::active() { super::ring0::SELECTORS } else { (USER_CS, USER_SS) };
    TrapFrame { vector: SYSCALL_VECTOR, rip, cs: cs as u64, rflags: 0x202, rsp, ss: ss as u64, ..TrapFrame::ZERO }
}

/// Installs the kernel stack that entries from ring 3 use on this CPU.
pub fn set_kernel_stack(top: u64) {
    let cpu = super::cpu::this();
    cpu.kernel_rsp.store(top, core::sync::atomic::Ordering::Relaxed);
    if super::ring3::active() {
        // Entries from ring 3 arrive on the CPU's entry stack and move here themselves.
        return;
    }
    // SAFETY: this CPU's own TSS; called with interrupts off during a switch.
    unsafe { (*cpu.tss.get()).rsp[0] = top };
}

/// Loads the FS base (the program's TLS pointer): WRFSBASE in ring 3 (it runs natively there
/// on PVM hosts, whatever CPUID says), the MSR in ring 0.
pub fn set_fs_base(base: u64) {
    if super::ring3::in_ring0() {
        // SAFETY: FS base only affects FS-relative accesses, which the kernel does not make.
        unsafe { wrmsr(MSR_FS_BASE, base) };
    } else {
        // SAFETY: as above; ring 3 only runs in ring-3 mode, where the host allows WRFSBASE.
        unsafe { core::arch::asm!("wrfsbase {}", in(reg) base, options(nostack, preserves_flags)) };
    }
}
