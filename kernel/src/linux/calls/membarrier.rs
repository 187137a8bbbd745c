//! membarrier(cmd, flags, cpu_id) as Linux 6.x answers it: QUERY lists every command; GLOBAL,
//! GLOBAL_EXPEDITED and the PRIVATE_EXPEDITED family make every thread of the program that runs
//! on another CPU pass a full memory barrier before the call returns (`arch::membarrier`: an
//! IPI to each busy vCPU, the only CPUs a program of one process has), SYNC_CORE with a
//! serializing instruction; the PRIVATE_EXPEDITED commands are EPERM before their REGISTER
//! (which is kept across fork and dropped at execve, as Linux keeps it per mm). The RSEQ pair
//! also makes the threads running on other CPUs leave the rseq critical section they are in
//! (`rseq::fence_others`; FLAG_CPU's one CPU is widened to all). Unknown commands and flags
//! are EINVAL.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EINVAL, EPERM};

const QUERY: u64 = 0;
const GLOBAL: u64 = 1 << 0;
const GLOBAL_EXPEDITED: u64 = 1 << 1;
const REGISTER_GLOBAL_EXPEDITED: u64 = 1 << 2;
const PRIVATE_EXPEDITED: u64 = 1 << 3;
const REGISTER_PRIVATE_EXPEDITED: u64 = 1 << 4;
const PRIVATE_EXPEDITED_SYNC_CORE: u64 = 1 << 5;
const REGISTER_PRIVATE_EXPEDITED_SYNC_CORE: u64 = 1 << 6;
const PRIVATE_EXPEDITED_RSEQ: u64 = 1 << 7;
const REGISTER_PRIVATE_EXPEDITED_RSEQ: u64 = 1 << 8;
const GET_REGISTRATIONS: u64 = 1 << 9;
/// MEMBARRIER_CMD_FLAG_CPU: only the CPU `cpu_id` (PRIVATE_EXPEDITED_RSEQ only).
const FLAG_CPU: u64 = 1;

/// Every command QUERY reports (Linux 6.3 and later with rseq).
const ALL: u64 = GLOBAL
    | GLOBAL_EXPEDITED
    | REGISTER_GLOBAL_EXPEDITED
    | PRIVATE_EXPEDITED
    | REGISTER_PRIVATE_EXPEDITED
    | PRIVATE_EXPEDITED_SYNC_CORE
    | REGISTER_PRIVATE_EXPEDITED_SYNC_CORE
    | PRIVATE_EXPEDITED_RSEQ
    | REGISTER_PRIVATE_EXPEDITED_RSEQ
    | GET_REGISTRATIONS;

/// The REGISTER_* commands the program has made (their bits, as GET_REGISTRATIONS answers).
static REGISTERED: AtomicU64 = AtomicU64::new(0);

/// execve: a new program starts unregistered (Linux's membarrier_exec_mmap).
pub fn after_exec() {
    REGISTERED.store(0, Ordering::SeqCst);
}

fn barrier(sync_core: bool) {
    crate::arch::membarrier::all_cpus(crate::cpu::count(), sync_core);
}

/// The barrier of a PRIVATE_EXPEDITED command, once `register` (its REGISTER bit) was made.
fn private(register: u64, sync_core: bool) -> SysResult {
    if REGISTERED.load(Ordering::SeqCst) & register == 0 {
        return Err(EPERM);
    }
    barrier(sync_core);
    Ok(0)
}

pub fn membarrier(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (cmd, flags) = (a[0] as u32 as u64, a[1] as u32 as u64);
    let flags_ok = if cmd == PRIVATE_EXPEDITED_RSEQ { flags & !FLAG_CPU == 0 } else { flags == 0 };
    if !flags_ok {
        return Err(EINVAL);
    }
    match cmd {
        QUERY => Ok(ALL),
        GLOBAL | GLOBAL_EXPEDITED => {
            barrier(false);
            Ok(0)
        }
        REGISTER_GLOBAL_EXPEDITED
        | REGISTER_PRIVATE_EXPEDITED
        | REGISTER_PRIVATE_EXPEDITED_SYNC_CORE
        | REGISTER_PRIVATE_EXPEDITED_RSEQ => {
            REGISTERED.fetch_or(cmd, Ordering::SeqCst);
            Ok(0)
        }
        PRIVATE_EXPEDITED => private(REGISTER_PRIVATE_EXPEDITED, false),
        PRIVATE_EXPEDITED_SYNC_CORE => private(REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, true),
        // With FLAG_CPU Linux interrupts only `cpu_id`; all of them is a superset.
        PRIVATE_EXPEDITED_RSEQ => {
            if REGISTERED.load(Ordering::SeqCst) & REGISTER_PRIVATE_EXPEDITED_RSEQ != 0 {
                crate::linux::rseq::fence_others();
            }
            private(REGISTER_PRIVATE_EXPEDITED_RSEQ, false)
        }
        GET_REGISTRATIONS => Ok(REGISTERED.load(Ordering::SeqCst)),
        _ => Err(EINVAL),
    }
}
