//! Host system calls: raw `syscall(2)` so the guest gets Linux's own semantics (not a libc
//! wrapper's), with the result as the guest will see it.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

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
///
/// A vCPU thread's host call that a signal passed on to the program interrupted (one `hrt`
/// handles without SA_RESTART for the program: a background job's terminal write or
/// tcsetattr with a handler for SIGTTOU fails with EINTR each time the host raises SIGTTOU)
/// answers `SIGNAL_CAME_FIRST`: the kernel then takes the host's signals at once and answers
/// EINTR or a restart if one is for the calling thread, or makes the call again. Restarted
/// here, such a call was restarted for good, since the guest cannot run to take the signal
/// and cancel the call while its vCPU thread makes it (a quick call served at the doorbell):
/// 100 % of a host CPU, the handler never ran. Other threads restart until the guest cancels
/// (a poll then keeps its deadline).
pub fn restarting(stopping: &AtomicBool, mut f: impl FnMut() -> libc::c_long) -> SysResult<i64> {
    let passed = crate::vm::host_signals::passed_besides_sigchld();
    let mut first = true;
    loop {
        if !(first && quick()) && cancelled() {
            return Err(Errno::EINTR);
        }
        first = false;
        match ret(f()) {
            Err(Errno::EINTR) if !stopping.load(Ordering::Relaxed) && !cancelled() => {
                if RUNS_A_VCPU.with(|v| v.get()) && crate::vm::host_signals::passed_besides_sigchld() != passed {
                    return Err(Errno(hrt_abi::channel::SIGNAL_CAME_FIRST as i32));
                }
            }
            r => return r,
        }
    }
}

thread_local! {
    /// The thread runs a vCPU (`runs_a_vcpu`).
    static RUNS_A_VCPU: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as one that runs a vCPU: while it makes a host call, its guest
/// CPU does not run (`restarting`).
pub fn runs_a_vcpu() {
    RUNS_A_VCPU.with(|v| v.set(true));
}

thread_local! {
    /// The cancel word of the call this thread performs (`with_cancel`), its bit, and whether
    /// the call is a quick one.
    static CANCEL: Cell<(*const AtomicU64, u64, bool)> = const { Cell::new((std::ptr::null(), 0, false)) };
}

/// Runs `f` (one forwarded call) so that its host calls give up with EINTR, instead of
/// restarting, once `bit` is set in `word` (the guest's caller was interrupted by a signal).
/// A `quick` call (one that does not wait: `Forwarder::may_block` said so) makes each host
/// call once whatever the word says, and gives up only if the host interrupted it: Linux
/// finishes such a call (an lseek, an fstat, a read of a regular file) and takes the signal
/// after it, never failing it with EINTR. A call that may wait gives up before it starts.
pub fn with_cancel<R>(word: &AtomicU64, bit: u64, quick: bool, f: impl FnOnce() -> R) -> R {
    CANCEL.with(|c| c.set((word as *const AtomicU64, bit, quick)));
    let r = f();
    CANCEL.with(|c| c.set((std::ptr::null(), 0, false)));
    r
}

/// Whether the call this thread performs is a quick one (`with_cancel`).
fn quick() -> bool {
    CANCEL.with(|c| c.get().2)
}

fn cancelled() -> bool {
    let (word, bit, _) = CANCEL.with(|c| c.get());
    // SAFETY: `with_cancel` set a pointer to a word that outlives the call it wraps.
    !word.is_null() && unsafe { (*word).load(Ordering::SeqCst) } & bit != 0
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
