//! The fast path of rewritten system calls: a few calls that need no trap frame (the identity
//! calls and futex wake-ups, which OpenMP barriers make constantly) are served by a plain
//! function call from the gate's entry (`arch::ring3::fast_call_entry`), on the program's stack
//! (the rewrite conditions guarantee the site's function keeps nothing below its stack
//! pointer), with no frame to build and no IRETQ back. Everything else, and every case with
//! work for the return path, takes the full path.
//!
//! The return path's work is signals: a call is served here only while no signal is pending
//! anywhere, and if one became pending meanwhile, the result is kept in the thread's record
//! and the call continues down the full path, which returns that result and delivers the
//! signal (so a handler never waits for a later kernel entry). `--strace` turns the fast path
//! off, so that every call is traced.

use core::sync::atomic::Ordering;

use linux_raw_sys::general::{__NR_futex, __NR_getpid, __NR_gettid};

use super::signal::state::PENDING_COUNT;
use crate::arch::ring3::FastCallRegs as Saved;

/// What the fast path answers when the call must take the full path.
pub const NOT_FAST: i64 = i64::MIN;

/// Turns the fast path on (rewriting on, no `--strace`).
pub fn init(strace: bool) {
    if super::rewrite::enabled() && !strace {
        crate::arch::ring3::set_fast_call_handler(serve);
    }
}

/// Serves the call in `saved` if it is one of the fast ones, else answers `NOT_FAST`.
#[allow(non_upper_case_globals)] // linux-raw-sys names the numbers __NR_getpid etc.
extern "C" fn serve(saved: &Saved) -> i64 {
    if PENDING_COUNT.load(Ordering::SeqCst) != 0 {
        return NOT_FAST;
    }
    // A call through the gate from anything but a rewritten site is a NULL call: the full path
    // turns it into SIGSEGV.
    if !super::rewrite::is_rewritten(saved.return_address.wrapping_sub(2)) {
        return NOT_FAST;
    }
    let args = [saved.rdi, saved.rsi, saved.rdx, saved.r10, saved.r8, saved.r9];
    let fast = match saved.nr as u32 {
        __NR_getpid | __NR_gettid => true,
        __NR_futex => super::futex::is_wake_only(args[1]),
        _ => false,
    };
    // A program's seccomp filters see the call here too; one they do not simply allow takes
    // the full path (which applies their answer).
    if !fast || super::seccomp::active() && !super::seccomp::allows_fast(saved.nr, &args, saved.return_address) {
        return NOT_FAST;
    }
    let ret = match saved.nr as u32 {
        __NR_getpid => super::process::pid() as i64,
        __NR_gettid => super::process::current_tid() as i64,
        __NR_futex if super::futex::is_wake_only(args[1]) => super::errno::to_ret(super::futex::fast_wake(args)),
        _ => return NOT_FAST,
    };
    if PENDING_COUNT.load(Ordering::SeqCst) != 0 {
        // A signal arrived while we served: the full path returns `ret` and delivers it.
        // SAFETY: the current thread's record is alive while it runs.
        unsafe { (*crate::sched::current()).syscall_stash = ret };
        return NOT_FAST;
    }
    ret
}

/// The result the fast path computed for the current call, if it handed the call on.
pub fn take_stash() -> Option<i64> {
    let cur = crate::sched::current();
    // SAFETY: the current thread's record is alive while it runs; only it touches the field.
    let stash = unsafe { core::mem::replace(&mut (*cur).syscall_stash, NOT_FAST) };
    (stash != NOT_FAST).then_some(stash)
}
