//! The futex2 calls (Linux 6.7): futex_wake, futex_wait and futex_requeue, the classic futex
//! operations with their flags in a word of their own (the futex's size and whether it is
//! private, as in `struct futex_waitv`). They are carried out by the classic calls
//! (`futex::futex`: this kernel's queues, or the host's for memory shared with other
//! processes), after futex2's own argument checks.

use super::errno::{SysResult, EINVAL, ENOSYS};
use super::futex::{
    self, FUTEX_CLOCK_REALTIME, FUTEX_CMP_REQUEUE, FUTEX_PRIVATE_FLAG, FUTEX_WAIT_BITSET, FUTEX_WAKE_BITSET,
};
use super::uaccess;
use crate::arch::traps::TrapFrame;

const FUTEX2_SIZE_MASK: u64 = 0x3;
const FUTEX2_SIZE_U32: u64 = 0x2;
const FUTEX2_NUMA: u64 = 0x4;
const FUTEX2_MPOL: u64 = 0x8;
const FUTEX2_PRIVATE: u64 = 128;

const CLOCK_REALTIME: u64 = 0;
const CLOCK_MONOTONIC: u64 = 1;

/// The classic operation's private flag for futex2 `flags`, after Linux's checks: known
/// flags only and a 32-bit futex (EINVAL); NUMA futexes are not provided here (ENOSYS, said
/// once).
fn classic_flags(flags: u64) -> Result<u64, u32> {
    if flags & !(FUTEX2_SIZE_MASK | FUTEX2_NUMA | FUTEX2_MPOL | FUTEX2_PRIVATE) != 0 {
        return Err(EINVAL);
    }
    if flags & (FUTEX2_NUMA | FUTEX2_MPOL) != 0 {
        static SAID: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);
        if !SAID.swap(true, core::sync::atomic::Ordering::Relaxed) {
            kprintln!(
                "hrt: NUMA futexes (FUTEX2_NUMA, FUTEX2_MPOL) are not implemented: returning ENOSYS (reported once)"
            );
        }
        return Err(ENOSYS);
    }
    if flags & FUTEX2_SIZE_MASK != FUTEX2_SIZE_U32 {
        return Err(EINVAL);
    }
    Ok(if flags & FUTEX2_PRIVATE != 0 { FUTEX_PRIVATE_FLAG } else { 0 })
}

/// A value or mask that does not fit the 32-bit futex is EINVAL.
fn fits(v: u64) -> Result<u32, u32> {
    u32::try_from(v).map_err(|_| EINVAL)
}

/// futex_wake(uaddr, mask, nr, flags): wakes up to `nr` waiters whose bits meet `mask`; a
/// count of 0 wakes none (futex2 is strict where FUTEX_WAKE wakes one).
pub fn futex_wake(frame: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (addr, mask, nr, flags) = (a[0], a[1], a[2] as u32 as i32, a[3] as u32 as u64);
    let op = FUTEX_WAKE_BITSET | classic_flags(flags)?;
    let mask = fits(mask)?;
    if mask == 0 {
        return Err(EINVAL);
    }
    if nr == 0 {
        // The futex's key is still checked (a shared one must be mapped).
        if op & FUTEX_PRIVATE_FLAG != 0 {
            futex::private_key(addr)?;
        } else {
            futex::user_atomic(addr)?;
        }
        return Ok(0);
    }
    // A negative count wakes one, as Linux counts.
    let n = if nr < 0 { 1 } else { nr as u64 };
    futex::futex(frame, [addr, op, n, 0, 0, mask as u64])
}

/// futex_wait(uaddr, val, mask, flags, timeout, clockid): waits while the word holds `val`,
/// for a wake-up whose bits meet `mask`, until the absolute `timeout` on `clockid`
/// (CLOCK_MONOTONIC or CLOCK_REALTIME).
pub fn futex_wait(frame: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (addr, val, mask, flags, timeout, clock) = (a[0], a[1], a[2], a[3] as u32 as u64, a[4], a[5]);
    let mut op = FUTEX_WAIT_BITSET | classic_flags(flags)?;
    let (val, mask) = (fits(val)?, fits(mask)?);
    if timeout != 0 {
        match clock as u32 as u64 {
            CLOCK_MONOTONIC => {}
            CLOCK_REALTIME => op |= FUTEX_CLOCK_REALTIME,
            _ => return Err(EINVAL),
        }
    }
    futex::futex(frame, [addr, op, val as u64, timeout, 0, mask as u64])
}

/// struct futex_waitv: value, address, flags, reserved.
#[derive(Clone, Copy)]
#[repr(C)]
struct Waitv {
    val: u64,
    uaddr: u64,
    flags: u32,
    reserved: u32,
}

/// futex_requeue(waiters, flags, nr_wake, nr_requeue): FUTEX_CMP_REQUEUE from `waiters[0]`
/// (whose value must still be its word's) to `waiters[1]`.
pub fn futex_requeue(frame: &mut TrapFrame, a: [u64; 6]) -> SysResult {
    let (list, flags, nr_wake, nr_requeue) = (a[0], a[1], a[2], a[3]);
    if flags != 0 {
        return Err(EINVAL);
    }
    let size = core::mem::size_of::<Waitv>() as u64;
    let from = uaccess::read::<Waitv>(list)?;
    let to = uaccess::read::<Waitv>(list + size)?;
    let mut private = FUTEX_PRIVATE_FLAG;
    for w in [from, to] {
        if w.reserved != 0 {
            return Err(EINVAL);
        }
        private &= classic_flags(w.flags as u64)?;
    }
    let cmp = fits(from.val)?;
    futex::futex(frame, [from.uaddr, FUTEX_CMP_REQUEUE | private, nr_wake, nr_requeue, to.uaddr, cmp as u64])
}
