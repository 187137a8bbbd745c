//! Host system calls: raw `syscall(2)` so the guest gets Linux's own semantics (not a libc
//! wrapper's), with the result as the guest will see it.

use std::sync::atomic::{AtomicBool, Ordering};

use super::errno::{Errno, SysResult};

/// A raw host system call's result.
pub fn ret(r: libc::c_long) -> SysResult<i64> {
    if r < 0 {
        Err(Errno::last())
    } else {
        Ok(r)
    }
}

/// Runs a host call, restarting it when a signal aimed at the monitor interrupted it (the
/// program installed no handler for the monitor's signals, so it must not see EINTR: Linux's
/// SA_RESTART view) — unless the run is ending (`stopping`), in which case EINTR is returned so
/// a vCPU thread blocked in a forwarded call can be freed.
pub fn restarting(stopping: &AtomicBool, mut f: impl FnMut() -> libc::c_long) -> SysResult<i64> {
    loop {
        match ret(f()) {
            Err(Errno::EINTR) if !stopping.load(Ordering::Relaxed) => continue,
            r => return r,
        }
    }
}

/// An `int` argument as the host call takes it (Linux uses the low 32 bits, sign-extended).
pub fn int(a: u64) -> libc::c_long {
    a as u32 as i32 as libc::c_long
}

/// An `unsigned int` argument (mode_t, flags, ioctl numbers).
pub fn uint(a: u64) -> libc::c_long {
    a as u32 as libc::c_long
}

/// A host pointer as a system-call argument.
pub fn ptr<T>(p: *const T) -> libc::c_long {
    p as libc::c_long
}
