//! kcmp(pid1, pid2, type, idx1, idx2) within the program: its threads share one address
//! space, descriptor table, file-system context, signal handlers, I/O context and System V
//! undo list (0: the same), and KCMP_FILE compares two of its descriptors' open files on the
//! host (`process::SAME_FILE`). Another process's resources are not comparable from here
//! (its descriptor numbers are its own VM's): ENOSYS with a line, after Linux's ESRCH for
//! none; so is KCMP_EPOLL_TFD.

use hrt_abi::process as op;

use crate::arch::traps::TrapFrame;
use crate::linux::errno::{SysResult, EINVAL, ENOSYS, ESRCH};

const KCMP_FILE: u64 = 0;
const KCMP_SYSVSEM: u64 = 6;
const KCMP_EPOLL_TFD: u64 = 7;

pub fn kcmp(_: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (pid1, pid2, kind, idx1, idx2) = (a[0] as u32 as i32, a[1] as u32 as i32, a[2], a[3], a[4]);
    let own = |p: i32| {
        p > 0 && (p as u32 == crate::linux::process::pid() || crate::linux::signal::is_program_thread(p as u32))
    };
    for p in [pid1, pid2] {
        if p <= 0 || !own(p) && !super::procs::host_process_exists(p as u32) {
            return Err(ESRCH);
        }
    }
    if !own(pid1) || !own(pid2) {
        return unsupported("kcmp of another process");
    }
    match kind {
        KCMP_FILE => {
            let same = super::procs::call(super::procs::tagged(op::SAME_FILE), [idx1, idx2, 0, 0, 0, 0])?;
            // Linux orders different files by their (obfuscated) addresses: 1 or 2.
            Ok(if same == 1 { 0 } else { 1 })
        }
        k if k <= KCMP_SYSVSEM => Ok(0),
        KCMP_EPOLL_TFD => unsupported("kcmp's KCMP_EPOLL_TFD"),
        _ => Err(EINVAL),
    }
}

fn unsupported(what: &str) -> SysResult {
    static SAID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
    if !SAID.swap(true, core::sync::atomic::Ordering::Relaxed) {
        crate::kprintln!("hrt: {what} is not implemented: returning ENOSYS (reported once)");
    }
    Err(ENOSYS)
}
