//! Trap dispatch: exceptions (with a readable panic), registered interrupt handlers, and
//! fault probes that let self-tests provoke a fault and inspect how it was reported.

use core::sync::atomic::{AtomicUsize, Ordering};

use super::{apic, instr};

/// Registers saved by `idt::trap_common`, then what the stub and the CPU pushed.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct TrapFrame {
    pub r15: u64,
    pub r14: u64,
    pub r13: u64,
    pub r12: u64,
    pub r11: u64,
    pub r10: u64,
    pub r9: u64,
    pub r8: u64,
    pub rbp: u64,
    pub rdi: u64,
    pub rsi: u64,
    pub rdx: u64,
    pub rcx: u64,
    pub rbx: u64,
    pub rax: u64,
    pub vector: u64,
    pub error: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

pub const VEC_PAGE_FAULT: u64 = 14;

pub fn exception_name(vector: u64) -> &'static str {
    match vector {
        0 => "Divide error (#DE)",
        1 => "Debug (#DB)",
        2 => "Non-maskable interrupt",
        3 => "Breakpoint (#BP)",
        4 => "Overflow (#OF)",
        5 => "Bound range exceeded (#BR)",
        6 => "Invalid opcode (#UD)",
        7 => "Device not available (#NM)",
        8 => "Double fault (#DF)",
        10 => "Invalid TSS (#TS)",
        11 => "Segment not present (#NP)",
        12 => "Stack-segment fault (#SS)",
        13 => "General protection fault (#GP)",
        14 => "Page fault (#PF)",
        16 => "x87 floating-point error (#MF)",
        17 => "Alignment check (#AC)",
        18 => "Machine check (#MC)",
        19 => "SIMD floating-point exception (#XM)",
        20 => "Virtualization exception (#VE)",
        21 => "Control protection exception (#CP)",
        _ => "Reserved exception",
    }
}

/// An interrupt handler: runs with interrupts disabled, on the interrupted thread's stack.
pub type Handler = fn(&mut TrapFrame);

/// Handler per vector (0 = none), stored as `usize` so the table can be a lock-free static.
static HANDLERS: [AtomicUsize; 256] = [const { AtomicUsize::new(0) }; 256];

/// Installs `handler` for `vector` (>= 32) and makes the gate present.
pub fn register(vector: u8, handler: Handler) {
    assert!(vector >= 32, "vector {vector} is an exception");
    HANDLERS[vector as usize].store(handler as usize, Ordering::Release);
    super::idt::set_gate(vector, 0, false);
}

/// Run on every return to the program (signal delivery); 0 = none.
static USER_RETURN_HOOK: AtomicUsize = AtomicUsize::new(0);

/// Installs the function run with the program's registers whenever a trap (system call,
/// exception, interrupt) returns to the program.
pub fn set_user_return_hook(hook: Handler) {
    USER_RETURN_HOOK.store(hook as usize, Ordering::Release);
}

/// Called by `trap_common` for every trap, with interrupts disabled.
pub extern "C" fn dispatch(frame: &mut TrapFrame) {
    dispatch_trap(frame);
    let to_program =
        frame.vector == super::syscall::SYSCALL_VECTOR || frame.cs & 3 == 3 || super::ring0::interrupted_program(frame);
    let hook = USER_RETURN_HOOK.load(Ordering::Acquire);
    if to_program && hook != 0 {
        // SAFETY: only `set_user_return_hook` stores non-zero values, and they are `Handler`s.
        let hook: Handler = unsafe { core::mem::transmute::<usize, Handler>(hook) };
        hook(frame);
    }
}

fn dispatch_trap(frame: &mut TrapFrame) {
    if frame.vector == super::syscall::SYSCALL_VECTOR {
        crate::linux::syscall::dispatch(frame);
        return;
    }
    if frame.vector < 32 {
        exception(frame);
        return;
    }
    let h = HANDLERS[frame.vector as usize].load(Ordering::Acquire);
    if h != 0 {
        // SAFETY: only `register` stores non-zero values, and they are `Handler`s.
        let handler: Handler = unsafe { core::mem::transmute::<usize, Handler>(h) };
        handler(frame);
    }
    if frame.vector != apic::SPURIOUS_VECTOR as u64 {
        apic::eoi();
    }
    crate::sched::after_interrupt();
}

fn exception(frame: &mut TrapFrame) {
    let cr2 = if frame.vector == VEC_PAGE_FAULT { instr::read_cr2() } else { 0 };
    if probe_recover(frame, cr2) {
        return;
    }
    if frame.vector == VEC_PAGE_FAULT && super::paging::retry_spurious_fault(cr2, frame.error) {
        return;
    }
    if frame.cs & 3 == 3 {
        if frame.vector == 6 && frame.rip == super::syscall::trampoline_page() {
            super::syscall::syscall_from_trampoline(frame);
            return;
        }
        crate::linux::fault::user_exception(frame, cr2);
        return;
    }
    if super::ring0::interrupted_program(frame) {
        crate::linux::fault::user_exception(frame, cr2);
        return;
    }
    crate::panic::exception_panic(frame, cr2);
}

/// What a caught fault looked like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FaultInfo {
    pub vector: u64,
    pub error: u64,
    pub address: u64,
    pub rip: u64,
}

/// The fault most recently caught by a probe on each CPU.
static LAST_FAULT: [crate::sync::PerCpuCell<Option<FaultInfo>>; hrt_abi::MAX_CPUS] =
    [const { crate::sync::PerCpuCell::new(None) }; hrt_abi::MAX_CPUS];

core::arch::global_asm!(
    ".section .text",
    ".global hrt_probe_read",
    "hrt_probe_read:",
    "    mov rax, [rdi]",
    "    xor edx, edx",
    "    ret",
    ".global hrt_probe_read_fixup",
    "hrt_probe_read_fixup:",
    "    mov edx, 1",
    "    ret",
    ".global hrt_probe_ud2",
    "hrt_probe_ud2:",
    "    ud2",
    "    xor edx, edx",
    "    ret",
    ".global hrt_probe_ud2_fixup",
    "hrt_probe_ud2_fixup:",
    "    mov edx, 1",
    "    ret",
);

extern "C" {
    fn hrt_probe_read(addr: u64);
    fn hrt_probe_read_fixup();
    fn hrt_probe_ud2(unused: u64);
    fn hrt_probe_ud2_fixup();
}

/// If the fault happened at a probe instruction, records it and resumes at the fixup.
fn probe_recover(frame: &mut TrapFrame, cr2: u64) -> bool {
    let fixup = if frame.rip == hrt_probe_read as *const () as u64 {
        hrt_probe_read_fixup as *const () as u64
    } else if frame.rip == hrt_probe_ud2 as *const () as u64 {
        hrt_probe_ud2_fixup as *const () as u64
    } else {
        return false;
    };
    let info = FaultInfo { vector: frame.vector, error: frame.error, address: cr2, rip: frame.rip };
    // SAFETY: interrupts are off and the slot belongs to this CPU.
    unsafe { *LAST_FAULT[super::percpu::cpu_id()].get() = Some(info) };
    frame.rip = fixup;
    true
}

fn probe(f: unsafe extern "C" fn(u64), arg: u64) -> Result<u64, FaultInfo> {
    let was = super::irq::save_and_disable();
    let value: u64;
    let faulted: u64;
    // SAFETY: the probe functions follow the C ABI but report the fault flag in rdx; a fault
    // inside them is turned into a return through the fixup by `probe_recover`.
    unsafe {
        core::arch::asm!("call {f}", f = in(reg) f, in("rdi") arg, lateout("rax") value,
                         lateout("rdx") faulted, clobber_abi("C"));
    }
    // SAFETY: interrupts are still off; the slot belongs to this CPU.
    let info = unsafe { (*LAST_FAULT[super::percpu::cpu_id()].get()).take() };
    super::irq::restore(was);
    if faulted != 0 {
        Err(info.expect("probe fault without a record"))
    } else {
        Ok(value)
    }
}

/// Reads 8 bytes at `addr`, catching the fault if there is one.
pub fn probe_read(addr: u64) -> Result<u64, FaultInfo> {
    probe(hrt_probe_read, addr)
}

/// Executes `ud2` and returns the #UD it raised.
pub fn probe_invalid_opcode() -> Result<u64, FaultInfo> {
    probe(hrt_probe_ud2, 0)
}

/// Where `probe_invalid_opcode`'s ud2 sits, for tests comparing the reported rip.
pub fn invalid_opcode_probe_address() -> u64 {
    hrt_probe_ud2 as *const () as u64
}
