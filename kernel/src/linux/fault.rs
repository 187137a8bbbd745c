//! A program's fatal faults and signals end it the way a shell reports them: the signal's
//! description (with the faulting address and instruction for faults) on stderr, and exit
//! status 128 + signal.

use crate::arch::traps::TrapFrame;

fn description(sig: i32) -> &'static str {
    match sig {
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
        31 => "Bad system call",
        _ => "Killed by a signal",
    }
}

/// Ends the program with signal `sig`; `fault` = (faulting address, instruction pointer).
pub fn terminate(sig: i32, fault: Option<(u64, u64)>) -> ! {
    if !super::process::claim_end() {
        // Another thread is ending the program already; its status stands.
        super::process::lost_end()
    }
    let what = description(sig);
    match fault {
        Some((addr, rip)) => match super::uaccess::slice(rip, 8) {
            Ok(code) => kprintln!("{what} (address {addr:#x}, instruction at {rip:#x}: {code:02x?})"),
            Err(_) => kprintln!("{what} (address {addr:#x}, instruction at {rip:#x})"),
        },
        // Shells say nothing about a program killed by SIGINT or SIGPIPE.
        None if sig == 2 || sig == 13 => {}
        None => kprintln!("{what}"),
    }
    super::process::end_claimed(128 + sig)
}

/// An exception raised by the program (in ring 3, or in ring 0 with `--app-ring 0`).
pub fn user_exception(frame: &TrapFrame, cr2: u64) -> ! {
    let sig = match frame.vector {
        0 | 16 | 19 => 8,  // #DE, #MF, #XM: SIGFPE
        1 | 3 => 5,        // #DB, #BP: SIGTRAP
        6 => 4,            // #UD: SIGILL
        11 | 12 | 17 => 7, // #NP, #SS (a non-canonical stack pointer), #AC: SIGBUS, as on Linux
        _ => 11,           // #GP, #PF and the rest: SIGSEGV
    };
    let addr = if frame.vector == 14 { cr2 } else { 0 };
    terminate(sig, Some((addr, frame.rip)))
}
