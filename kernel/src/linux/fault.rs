//! A program's fatal faults and signals end it the way a shell reports them: the signal's
//! description (with the faulting address and instruction for faults) on stderr, and exit
//! status 128 + signal.

use super::core_dump;
use super::signal::{self, frame::FaultRegs, SigInfo, SI_KERNEL};
use crate::arch::traps::TrapFrame;

/// A shell's words for a program's death by signal `sig` (glibc's `strsignal`, which bash
/// prints): the real-time signals by their number above SIGRTMIN (34), as glibc counts them.
struct Description(i32);

impl core::fmt::Display for Description {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match (named(self.0), self.0) {
            (Some(name), _) => f.write_str(name),
            (None, rt @ 34..=64) => write!(f, "Real-time signal {}", rt - 34),
            (None, sig) => write!(f, "Unknown signal {sig}"),
        }
    }
}

fn named(sig: i32) -> Option<&'static str> {
    Some(match sig {
        1 => "Hangup",
        2 => "Interrupt",
        3 => "Quit",
        4 => "Illegal instruction",
        5 => "Trace/breakpoint trap",
        6 => "Aborted",
        7 => "Bus error",
        8 => "Floating point exception",
        9 => "Killed",
        10 => "User defined signal 1",
        11 => "Segmentation fault",
        12 => "User defined signal 2",
        13 => "Broken pipe",
        14 => "Alarm clock",
        15 => "Terminated",
        16 => "Stack fault",
        24 => "CPU time limit exceeded",
        25 => "File size limit exceeded",
        26 => "Virtual timer expired",
        27 => "Profiling timer expired",
        29 => "I/O possible",
        30 => "Power failure",
        31 => "Bad system call",
        _ => return None,
    })
}

/// Ends the calling thread's process with signal `sig`; `fault` = (faulting address,
/// instruction pointer). A vfork child before its exec is a process of its own on Linux: a
/// fault of its own or a signal sent to it ends only it, and its parent's wait reports the
/// signal (it ended the whole program, parent and all).
pub fn terminate(sig: i32, fault: Option<(u64, u64)>) -> ! {
    terminate_at(sig, fault, None)
}

/// `terminate`, where the thread's registers at the fault or signal are known (`stop`): they
/// go into the core file, if one is written.
pub fn terminate_at(sig: i32, fault: Option<(u64, u64)>, stop: Option<core_dump::Stop>) -> ! {
    crate::linux::calls::procs::end_if_child_killed(sig);
    end_program(sig, fault, stop)
}

/// Ends the program with signal `sig`, whichever thread calls (a signal sent to the program
/// from outside ends it even when a vfork child's thread takes it).
pub fn terminate_program(sig: i32, fault: Option<(u64, u64)>) -> ! {
    end_program(sig, fault, None)
}

fn end_program(sig: i32, fault: Option<(u64, u64)>, stop: Option<core_dump::Stop>) -> ! {
    if !super::process::claim_end(128 + sig, sig as u64) {
        // Another thread is ending the program already; its status stands.
        super::process::lost_end()
    }
    if super::process::reported_by_parent() {
        // Whoever waits for a forked (or spawned) child reports its death, as a shell does.
        super::process::end_by_signal(sig)
    }
    let what = Description(sig);
    let dumped = core_dump::write(sig, fault.map_or(0, |(addr, _)| addr), stop);
    let core = if dumped { " (core dumped)" } else { "" };
    match fault {
        Some((addr, rip)) => match super::uaccess::slice(rip, 8) {
            Ok(code) => kprintln!("{what} (address {addr:#x}, instruction at {rip:#x}: {code:02x?}){core}"),
            Err(_) => kprintln!("{what} (address {addr:#x}, instruction at {rip:#x}){core}"),
        },
        // Shells say nothing about a program killed by SIGINT or SIGPIPE.
        None if sig == 2 || sig == 13 => {}
        None => kprintln!("{what}{core}"),
    }
    super::process::end_by_signal(sig)
}

/// An exception raised by the program (in ring 3, or in ring 0 with `--app-ring 0`): its
/// synchronous signal goes to the program's handler when one is installed and not blocked;
/// otherwise the program ends with the shell-style report.
pub fn user_exception(frame: &mut TrapFrame, cr2: u64) {
    // A page the program may use that was left not present until now (`protect::set`).
    if frame.vector == 14 && super::protect::fault_in_lazy(cr2, frame.error) {
        return;
    }
    // Below a mapping that grows down (MAP_GROWSDOWN): it grows to the page.
    if frame.vector == 14 && frame.error & 1 == 0 && super::grows_down::fault(cr2) {
        return;
    }
    if (frame.vector == 14 && super::rewrite::bare_number_call(frame, cr2))
        || super::rewrite::blocked_push_call(frame, cr2)
        || super::rewrite::single_step_into_gate(frame)
    {
        super::syscall::dispatch(frame);
        return;
    }
    if frame.vector == 1 && crate::arch::call_gate::is_code_for_sites(frame.rip) {
        // The program's TF in code it reached through a rewritten site (a slot, a stub): that
        // code is the kernel's, not the program's to step through. Stepping ends there, as
        // after any rewritten call (`traps::program_flags_in_kernel`).
        frame.rflags &= !(1 << 8);
        return;
    }
    let past_end = if frame.vector == 14 {
        let (write, exec) = (frame.error & 2 != 0, frame.error & 16 != 0);
        super::shared_files::fault_past_end(cr2, write).or_else(|| super::past_eof::fault(cr2, write, exec))
    } else {
        None
    };
    if past_end == Some(false) {
        return; // The file grew over the page: it is the program's now.
    }
    as_linux_int_n(frame);
    let (sig, code, addr) = match frame.vector {
        0 => (8, FPE_INTDIV, frame.rip),
        16 | 19 => (8, fpe_code(frame.vector), frame.rip), // #MF, #XM
        1 => (5, TRAP_TRACE, frame.rip),                   // #DB
        3 => (5, SI_KERNEL, 0),                            // #BP (int3)
        6 => (4, ILL_ILLOPN, frame.rip),                   // #UD
        17 => (7, BUS_ADRALN, 0),                          // #AC
        11 | 12 => (7, SI_KERNEL, 0),                      // #NP, #SS (a non-canonical stack pointer), as on Linux
        // Page 0 is never the program's, nor any address above user space: Linux reports a
        // user touch of the kernel's half as a missing mapping even where a page is present
        // there (supervisor-only; a touch of 0xffff800000000000 was SEGV_ACCERR in some runs).
        14 if !(super::usermem::PAGE..super::uaccess::USER_END).contains(&cr2) => (11, SEGV_MAPERR, cr2),
        // A file mapping's page past the end of its file: SIGBUS, as on Linux.
        14 if past_end == Some(true) => (7, BUS_ADRERR, cr2),
        // The guard below the main stack (a runaway recursion) is a gap to Linux, not memory.
        14 if super::stack_guard::contains(cr2) => (11, SEGV_MAPERR, cr2),
        // A present page, or a mapped one the program may not touch (PROT_NONE is not present).
        14 if frame.error & 1 != 0 || super::usermap::is_mapped(cr2, 1) || is_prot_none(cr2) => (11, SEGV_ACCERR, cr2),
        14 => (11, SEGV_MAPERR, cr2),
        _ => (11, SI_KERNEL, 0), // #GP and the rest
    };
    let info = SigInfo { signo: sig, code, w16: addr, ..SigInfo::EMPTY };
    let regs = FaultRegs { err: frame.error, trapno: frame.vector, cr2 };
    if signal::deliver_fault(frame, info, regs) {
        return;
    }
    let shown = if frame.vector == 14 { cr2 } else { 0 };
    terminate_at(sig, Some((shown, frame.rip)), Some(core_dump::Stop { frame, code }))
}

/// `int n` (CD n) in ring 3: PVM raises #UD for every one, where Linux's gates give `int $3`
/// a breakpoint (SIGTRAP, after the instruction) and any other n a #GP naming the gate
/// (SIGSEGV, SI_KERNEL, error `n << 3 | 2`): the frame is made to say what Linux's would.
/// `int $0x80` (Linux's 32-bit system call, which HRT does not serve) stays SIGILL.
fn as_linux_int_n(frame: &mut TrapFrame) {
    if frame.vector != 6 || frame.cs & 3 != 3 {
        return;
    }
    let Ok(code) = super::uaccess::slice(frame.rip, 2) else { return };
    match (code[0], code[1]) {
        (0xcd, 0x80) => {}
        (0xcd, 3) => {
            frame.vector = 3;
            frame.rip += 2;
        }
        (0xcd, n) => {
            frame.vector = 13;
            frame.error = (n as u64) << 3 | 2;
        }
        _ => {}
    }
}

const FPE_INTDIV: i32 = 1;
const FPE_FLTDIV: i32 = 3;
const FPE_FLTINV: i32 = 7;
const TRAP_TRACE: i32 = 2;
const ILL_ILLOPN: i32 = 2;
const BUS_ADRALN: i32 = 1;
const BUS_ADRERR: i32 = 2;
const SEGV_MAPERR: i32 = 1;
const SEGV_ACCERR: i32 = 2;

/// si_code of a floating-point exception, as Linux's `fpu__exception_code` gives it: the
/// raised flags the program's control word leaves unmasked, in Linux's order (invalid,
/// division by zero, overflow, underflow or denormal, inexact). #MF (vector 16) is an x87
/// exception (its status and control words), #XM (19) an SSE one (MXCSR: its flags, and
/// their masks 7 bits up). Only division by zero was told from invalid here: an overflow
/// was FPE_FLTINV, and SBCL and ECL raised the wrong condition
/// (`floating-point-invalid-operation` for `(* most-positive-double-float 10d0)`).
fn fpe_code(vector: u64) -> i32 {
    const FPE_FLTOVF: i32 = 4;
    const FPE_FLTUND: i32 = 5;
    const FPE_FLTRES: i32 = 6;
    let (status, control) = if vector == 16 {
        let (mut sw, mut cw) = (0u16, 0u16);
        // SAFETY: FNSTSW and FNSTCW store the live (the program's) x87 status and control
        // words into the locals; neither waits for, nor raises, the pending exception.
        unsafe {
            core::arch::asm!("fnstsw [{}]", "fnstcw [{}]", in(reg) &mut sw, in(reg) &mut cw, options(nostack));
        }
        (sw as u32, cw as u32)
    } else {
        let mut mxcsr = 0u32;
        // SAFETY: STMXCSR only stores the (live, program's) MXCSR into the local.
        unsafe { core::arch::asm!("stmxcsr [{}]", in(reg) &mut mxcsr, options(nostack)) };
        (mxcsr, mxcsr >> 7)
    };
    let raised = status & !control & 0x3f;
    if raised & 0x01 != 0 {
        FPE_FLTINV
    } else if raised & 0x04 != 0 {
        FPE_FLTDIV
    } else if raised & 0x08 != 0 {
        FPE_FLTOVF
    } else if raised & 0x12 != 0 {
        FPE_FLTUND
    } else if raised & 0x20 != 0 {
        FPE_FLTRES
    } else {
        // None unmasked (Linux sends nothing then); kept as before: invalid.
        FPE_FLTINV
    }
}

/// Whether `addr` lies in a mapping whose protection is PROT_NONE (such pages count as unmapped
/// in the page map, but a fault there is an access error, SEGV_ACCERR, as on Linux). The break's
/// window above the break is not a mapping to Linux, though HRT keeps it reserved.
fn is_prot_none(addr: u64) -> bool {
    let page = addr & !(super::usermem::PAGE - 1);
    let end = page.saturating_add(super::usermem::PAGE);
    let above_break = {
        let b = super::process::PROCESS.brk.lock();
        (super::usermem::page_up(b.cur)..b.mapped_end).contains(&page)
    };
    !above_break && super::usermem::is_mapped(page, end) && !super::protect::allows(page, end, false)
}
