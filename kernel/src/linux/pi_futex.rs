//! Priority-inheritance futexes (FUTEX_LOCK_PI, LOCK_PI2, TRYLOCK_PI, UNLOCK_PI), what glibc's
//! and musl's PTHREAD_PRIO_INHERIT mutexes use: the word holds its owner's thread id, with
//! FUTEX_WAITERS set while someone sleeps on it (so that the owner's unlock comes here) and
//! FUTEX_OWNER_DIED once a robust owner died.
//!
//! The lock protocol is Linux's; the priority inheritance is not: HRT's scheduler gives every
//! program thread the same priority (SCHED_FIFO and SCHED_RR are refused), so there is no
//! priority to lend. Where Linux hands the lock straight to its first waiter, the unlock here
//! frees the word and wakes one waiter, which takes it as any thread may (the waiters bit
//! kept while others sleep): the same mutual exclusion, without the hand-over's fairness.
//! The waiters sleep in the ordinary futex queues (`futex::sleep_while`), so a robust owner's
//! death (`robust`) wakes one of them as for any robust mutex. On memory shared with other
//! processes the same protocol sleeps on the host's futex (`shared_futex`).

use core::sync::atomic::{AtomicU32, Ordering};

use super::errno::{SysResult, EAGAIN, EDEADLK, EPERM, ESRCH, ETIMEDOUT};
use super::futex;
use super::uaccess;

pub(super) const FUTEX_WAITERS: u32 = 0x8000_0000;
pub(super) const FUTEX_OWNER_DIED: u32 = 0x4000_0000;
pub(super) const FUTEX_TID_MASK: u32 = 0x3fff_ffff;

/// The futex word at `addr`, which the kernel writes (EFAULT unless writable, EINVAL unless
/// aligned).
pub(super) fn word(addr: u64) -> Result<&'static AtomicU32, u32> {
    let w = futex::user_atomic(addr)?;
    uaccess::check_write(addr, 4)?;
    Ok(w)
}

/// Takes the word if it has no owner (keeping FUTEX_OWNER_DIED, which tells the taker the last
/// owner died, and FUTEX_WAITERS while others sleep): Some(result) if this settles the call.
fn take(addr: u64, w: &AtomicU32, me: u32) -> Option<SysResult> {
    let v = w.load(Ordering::SeqCst);
    let owner = v & FUTEX_TID_MASK;
    if owner == me {
        return Some(Err(EDEADLK));
    }
    if owner != 0 {
        return None;
    }
    // Under the queue's lock: a waiter being listed now is seen, or sees the new word.
    let taken = futex::with_waiters(addr, |others| {
        let new = me | (v & FUTEX_OWNER_DIED) | if others { FUTEX_WAITERS } else { 0 };
        w.compare_exchange(v, new, Ordering::SeqCst, Ordering::SeqCst).is_ok()
    });
    // A word that changed meanwhile: look again.
    Some(if taken { Ok(0) } else { Err(EAGAIN) })
}

/// `take`, again while the word changes under it: Some(result) if the lock was free (taken)
/// or the caller's own (EDEADLK), None if another thread holds it.
fn take_settled(addr: u64, w: &AtomicU32, me: u32) -> Option<SysResult> {
    loop {
        match take(addr, w, me) {
            Some(Err(EAGAIN)) => continue,
            settled => return settled,
        }
    }
}

/// FUTEX_LOCK_PI / LOCK_PI2: takes the lock, sleeping while another thread holds it, until the
/// TSC `deadline` (ETIMEDOUT). A signal runs its handler and the call starts again, whatever
/// SA_RESTART says (as Linux's), since a lock call cannot answer EINTR.
pub fn lock(addr: u64, deadline: Option<u64>) -> SysResult {
    let w = word(addr)?;
    let me = super::process::current_tid();
    loop {
        if let Some(r) = take_settled(addr, w, me) {
            return r;
        }
        let v = w.load(Ordering::SeqCst);
        let owner = v & FUTEX_TID_MASK;
        if owner == 0 {
            continue;
        }
        // An owner that is no thread of the program (never was, or exited without unlocking
        // and without a robust list that names the lock): ESRCH, as Linux's lookup of it.
        if owner != me && !super::signal::state::is_program_thread(owner) {
            w.fetch_or(FUTEX_WAITERS, Ordering::SeqCst);
            return Err(ESRCH);
        }
        if v & FUTEX_WAITERS == 0
            && w.compare_exchange(v, v | FUTEX_WAITERS, Ordering::SeqCst, Ordering::SeqCst).is_err()
        {
            continue;
        }
        match futex::sleep_while(w, v | FUTEX_WAITERS, deadline) {
            Ok(_) | Err(EAGAIN) => {}
            Err(ETIMEDOUT) => return Err(ETIMEDOUT),
            Err(e) if e == super::errno::EINTR || e == super::signal::ERESTARTSYS => {
                return Err(super::signal::ERESTARTNOINTR)
            }
            Err(e) => return Err(e),
        }
    }
}

/// FUTEX_TRYLOCK_PI: takes the lock if nobody holds it, else EAGAIN (EWOULDBLOCK).
pub fn try_lock(addr: u64) -> SysResult {
    let w = word(addr)?;
    let me = super::process::current_tid();
    take_settled(addr, w, me).unwrap_or_else(|| {
        // As Linux's: the waiters bit is set before the owner is looked up (so it stays set
        // whatever the answer), ESRCH for an owner that is no thread (as `lock`).
        let owned = |v: u32| (v & FUTEX_TID_MASK != 0).then_some(v | FUTEX_WAITERS);
        let owner = w.fetch_update(Ordering::SeqCst, Ordering::SeqCst, owned).unwrap_or(0) & FUTEX_TID_MASK;
        if owner != 0 && !super::signal::state::is_program_thread(owner) {
            Err(ESRCH)
        } else {
            Err(EAGAIN)
        }
    })
}

/// FUTEX_UNLOCK_PI: the caller, the owner, frees the word and wakes one waiter (EPERM for
/// another thread's lock, or none).
pub fn unlock(addr: u64) -> SysResult {
    release(addr, |a, _| {
        futex::wake_address(a, 1);
        Ok(())
    })
}

/// Frees the word at `addr` if the caller owns it (EPERM otherwise), then calls `wake` with
/// the address and whether the word had FUTEX_WAITERS.
pub(super) fn release(addr: u64, wake: impl FnOnce(u64, bool) -> Result<(), u32>) -> SysResult {
    let w = word(addr)?;
    let me = super::process::current_tid();
    loop {
        let v = w.load(Ordering::SeqCst);
        if v & FUTEX_TID_MASK != me {
            return Err(EPERM);
        }
        if w.compare_exchange(v, 0, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            wake(addr, v & FUTEX_WAITERS != 0)?;
            return Ok(0);
        }
    }
}
