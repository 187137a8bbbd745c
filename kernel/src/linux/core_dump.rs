//! The program's core file: a program ending of a signal whose default action dumps core
//! (signal(7)) has the monitor write an ELF core of its memory and the ending thread's
//! registers (`nr::CORE_DUMP`), where and as large as the host's `core_pattern` and the
//! program's RLIMIT_CORE allow, so that `gdb prog core` works as after a native crash, every
//! thread's registers included.

use core::sync::atomic::Ordering;

use alloc::vec::Vec;

use hrt_abi::{CoreRecord, CoreThread, CORE_THREADS_MAX};

use crate::arch::traps::TrapFrame;
use crate::sync::SpinLock;

/// The record handed to the monitor: kernel memory that stays put (only the thread that
/// claimed the program's end writes it).
static RECORD: SpinLock<CoreRecord> = SpinLock::new(CoreRecord {
    signo: 0,
    code: 0,
    addr: 0,
    pid: 0,
    tid: 0,
    ppid: 0,
    pgrp: 0,
    sid: 0,
    regs_known: 0,
    regs: [0; 27],
    comm: [0; 16],
    auxv: [0; 2],
    others: [0; 2],
});

/// Whether `sig`'s default action dumps core.
pub fn dumps_core(sig: i32) -> bool {
    matches!(sig, 3..=8 | 11 | 24 | 25 | 31)
}

/// Where and why the ending thread stopped: its registers and the signal's code.
#[derive(Clone, Copy)]
pub struct Stop<'a> {
    pub frame: &'a TrapFrame,
    pub code: i32,
}

/// Writes the core file for signal `sig` if one is due (the program is dumpable and `sig`
/// dumps core; the monitor checks the limit and the pattern). True if the monitor wrote one.
/// The other CPUs are stopped meanwhile (as fork stops them), so that every other thread's
/// registers are the ones it left at the top of its kernel stack when it last entered the
/// kernel or was preempted; if they cannot be stopped in time, only this thread's are given.
pub fn write(sig: i32, fault_addr: u64, stop: Option<Stop>) -> bool {
    if !dumps_core(sig) || !super::calls::prctl::dumpable() {
        return false;
    }
    // SAFETY: the current thread's record is alive.
    let t = unsafe { &*crate::sched::current() };
    let frozen = crate::sched::freeze::freeze_others(FREEZE_TIMEOUT_NS, crate::sched::freeze::Halted::AreStopped);
    let others = if frozen { other_threads(t.tid) } else { Vec::new() };
    let mut r = RECORD.lock();
    r.signo = sig as u64;
    r.addr = fault_addr;
    r.pid = super::process::pid() as u64;
    r.tid = t.tid as u64;
    r.ppid = super::process::parent_pid() as u64;
    r.comm = super::thread_names::of(t);
    let stack = &super::loader::INITIAL_STACK;
    r.auxv = [stack[2].load(Ordering::Relaxed), stack[3].load(Ordering::Relaxed)];
    r.others = [others.as_ptr() as u64, others.len() as u64];
    // Without a fault's frame: the frame every full entry from the program leaves at the top
    // of the thread's kernel stack (a signal sent by a system call: the call's registers).
    let stop = stop.or_else(|| t.is_user.then(|| Stop { frame: program_frame(t), code: 0 }));
    if let Some(Stop { frame, code }) = stop {
        r.code = code as i64 as u64;
        r.regs_known = 1;
        r.regs = registers(frame, t.fs_base);
    }
    let written = crate::arch::hypercall::core_dump(&r) == 1;
    drop(r);
    if frozen {
        crate::sched::freeze::thaw();
    }
    written
}

/// How long the other CPUs get to reach a safe point: generous, since a vCPU on a loaded host
/// may wait tens of milliseconds for a host CPU (50 ms lost the other threads' registers at
/// load 10), and a dump is no fast path.
const FREEZE_TIMEOUT_NS: u64 = 1_000_000_000;

/// The program frame at the top of user thread `t`'s kernel stack.
fn program_frame(t: &crate::sched::thread::Thread) -> &TrapFrame {
    // SAFETY: the top of a live user thread's kernel stack, reserved for its program frame.
    unsafe { &*crate::arch::syscall::user_frame(crate::sched::thread::stack_top(t)) }
}

/// `struct user_regs_struct` from a frame (orig_rax -1: not in a system call).
fn registers(f: &TrapFrame, fs_base: u64) -> [u64; 27] {
    [
        f.r15,
        f.r14,
        f.r13,
        f.r12,
        f.rbp,
        f.rbx,
        f.r11,
        f.r10,
        f.r9,
        f.r8,
        f.rax,
        f.rcx,
        f.rdx,
        f.rsi,
        f.rdi,
        u64::MAX,
        f.rip,
        f.cs,
        f.rflags,
        f.rsp,
        f.ss,
        fs_base,
        0,
        0,
        0,
        0,
        0,
    ]
}

/// Every other live user thread's registers (the other CPUs stopped).
fn other_threads(me: u32) -> Vec<CoreThread> {
    let s = super::signal::state::SIGNALS.lock();
    let live = s.threads.iter().filter(|(&tid, t)| tid != me && !t.thread.is_null());
    live.take(CORE_THREADS_MAX as usize)
        .filter_map(|(&tid, ts)| {
            // SAFETY: registered threads are alive (they unregister under this lock first).
            let t = unsafe { &*ts.thread };
            t.is_user.then(|| CoreThread { tid: tid as u64, regs: registers(program_frame(t), t.fs_base) })
        })
        .collect()
}
