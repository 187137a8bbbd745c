//! The CPU time of the program's ended and waited-for children (`times`, getrusage's
//! RUSAGE_CHILDREN): the monitor's count (`op::CHILDREN_TIME`, the host's for `hrt`'s
//! children), asked again only after a call that may have reaped a child.
//!
//! Each question is a call to the monitor, which costs a VM exit wherever no service thread
//! polls the channel (two per `times()`, ~140 us on a PVM host with every vCPU started, as in
//! an OpenMP program, against 0.3 us natively), and programs that time themselves with
//! `times()` call it around every step. The count only changes when `hrt` reaps a child, which
//! for the program's children happens in its wait calls (`procs::call` marks them).

use core::sync::atomic::{AtomicU64, Ordering};

use hrt_abi::process as op;

use crate::sync::IrqSpinLock;

/// Reaping calls begun and ended: odd while one is under way.
static REAPS: AtomicU64 = AtomicU64::new(0);
/// (REAPS when asked, user ns, system ns) of the last answer.
static LAST: IrqSpinLock<Option<(u64, u64, u64)>> = IrqSpinLock::new(None);

/// Whether the monitor call `nr` may reap a child (and so change the children's time).
pub fn may_reap(nr: u64) -> bool {
    let nr = nr & ((1 << op::CONTEXT_SHIFT) - 1);
    nr == op::WAIT4 || nr == op::WAITID || nr == op::REAP_STAND_IN
}

/// Runs `f`, a call that may reap a child: answers asked meanwhile or before are not kept.
pub fn around_reap<T>(f: impl FnOnce() -> T) -> T {
    REAPS.fetch_add(1, Ordering::SeqCst);
    let r = f();
    REAPS.fetch_add(1, Ordering::SeqCst);
    r
}

/// (user, system) nanoseconds of the program's ended and waited-for children.
pub fn ns() -> (u64, u64) {
    let reaps = REAPS.load(Ordering::SeqCst);
    if let Some((at, user, sys)) = *LAST.lock() {
        if at == reaps && reaps.is_multiple_of(2) {
            return (user, sys);
        }
    }
    let us = |which| super::procs::call(op::CHILDREN_TIME, [which, 0, 0, 0, 0, 0]).unwrap_or(0);
    let (user, sys) = (us(0) * 1000, us(1) * 1000);
    // Kept only if no reaping call began or ended since `reaps` was read.
    if reaps.is_multiple_of(2) && REAPS.load(Ordering::SeqCst) == reaps {
        *LAST.lock() = Some((reaps, user, sys));
    }
    (user, sys)
}

/// A forked child's children are its own (none yet): ask again.
pub fn after_fork() {
    *LAST.lock() = None;
}
