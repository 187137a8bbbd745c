//! Memory the program locked: `mlock`, `mlock2`, `mlockall` and `MAP_LOCKED`, as Linux keeps
//! them (a flag of each mapping). Every page of the program is resident and stays so (no
//! demand paging, no swap), so a lock changes no memory; what it changes is what the program
//! can see and what it may do:
//! - RLIMIT_MEMLOCK: without CAP_IPC_LOCK, locking past the soft limit is ENOMEM (mlock,
//!   mlockall), EAGAIN for a mapping that would be locked (MAP_LOCKED, or any after
//!   `mlockall(MCL_FUTURE)`), and with a limit of 0 locking is EPERM;
//! - `/proc/self/status`'s VmLck (every locked byte, MLOCK_ONFAULT ones too, as Linux counts
//!   `locked_vm`), smaps' `Locked:` and `lo` flag, and maps areas cut where locking changes;
//! - `madvise` DONTNEED, FREE and REMOVE on locked memory: EINVAL.
//!
//! Locks go with the memory, as a Linux mapping's flags do: unmapped or replaced
//! (`release`), moved or grown by mremap (`moved`); a forked child has none and no
//! MCL_FUTURE (`after_fork`), and exec unmaps everything (`after_exec` forgets MCL_FUTURE).

use core::sync::atomic::{AtomicU32, Ordering};

use crate::linux::errno::{Errno, EAGAIN, ENOMEM, EPERM};
use crate::linux::process::PROCESS;
use crate::linux::range_map::{RangeMap, Value};
use crate::sync::IrqSpinLock;

const RLIMIT_MEMLOCK: usize = 8;
const CAP_IPC_LOCK: u32 = 14;

/// One locked range: locked on fault (MLOCK_ONFAULT, MCL_ONFAULT) or at once.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Lock {
    pub on_fault: bool,
}

impl Value for Lock {}

static RANGES: IrqSpinLock<RangeMap<Lock>> = IrqSpinLock::new(RangeMap::new());

/// `mlockall(MCL_FUTURE)`: mappings made from now on are locked. 0: no; `FUTURE`, with
/// `FUTURE_ON_FAULT` for MCL_ONFAULT.
static FUTURE: AtomicU32 = AtomicU32::new(0);
const FUTURE_ON: u32 = 1;
const FUTURE_ON_FAULT: u32 = 2;

/// The soft RLIMIT_MEMLOCK.
fn limit() -> u64 {
    PROCESS.rlimits.lock()[RLIMIT_MEMLOCK].0
}

/// Whether the program may lock memory at all (Linux's `can_do_mlock`).
pub fn may_lock() -> Result<(), Errno> {
    if limit() != 0 || super::calls::ids::capable(CAP_IPC_LOCK) {
        Ok(())
    } else {
        Err(EPERM)
    }
}

/// Whether `total` locked bytes are allowed (the limit, unless the program has CAP_IPC_LOCK).
pub fn within_limit(total: u64) -> bool {
    within_soft_limit(total) || unlimited()
}

/// Whether `total` locked bytes are within the soft RLIMIT_MEMLOCK.
pub fn within_soft_limit(total: u64) -> bool {
    total <= limit()
}

/// Whether the program has CAP_IPC_LOCK, so that no limit binds (asked of the host: call
/// without a lock held).
pub fn unlimited() -> bool {
    super::calls::ids::capable(CAP_IPC_LOCK)
}

/// Bytes locked (VmLck).
pub fn total() -> u64 {
    RANGES.lock().iter().map(|(s, e, _)| e - s).sum()
}

/// Bytes of `[start, end)` locked.
pub fn within(start: u64, end: u64) -> u64 {
    RANGES.lock().overlapping(start, end).iter().map(|(s, e, _)| e - s).sum()
}

/// Whether any of `[start, end)` is locked.
pub fn any(start: u64, end: u64) -> bool {
    within(start, end) != 0
}

/// Locks `[start, end)` (`Some`) or unlocks it (`None`). Locked at once (not on fault), its
/// accessible pages are read, as Linux populates them: the host then holds them (smaps' Rss),
/// and the program's first touch does not wait for the host's fault.
pub fn set(start: u64, end: u64, lock: Option<Lock>) {
    {
        let mut map = RANGES.lock();
        map.take(start, end);
        if let Some(l) = lock {
            map.insert(start, end, l);
        }
    }
    if lock.is_some_and(|l| !l.on_fault) {
        populate(start, end);
    }
}

/// Reads a byte of each accessible page of `[start, end)` (pages past a file's end, which
/// fault, are left).
fn populate(start: u64, end: u64) {
    use super::protect::{PROT_READ, PROT_WRITE};
    for (s, e, prot) in super::protect::runs(start, end) {
        if prot & (PROT_READ | PROT_WRITE) == 0 {
            continue;
        }
        for page in (s..e).step_by(super::usermem::PAGE as usize) {
            let _ = super::uaccess::read::<u8>(page);
        }
    }
}

/// Unlocks everything (munlockall).
pub fn clear() {
    let mut map = RANGES.lock();
    map.take(0, u64::MAX);
}

/// `[start, end)` with how each part is locked (None: not), in address order.
pub fn runs(start: u64, end: u64) -> alloc::vec::Vec<(u64, u64, Option<Lock>)> {
    let locked = RANGES.lock().overlapping(start, end);
    let mut out = alloc::vec::Vec::new();
    let mut cur = start;
    for (s, e, lock) in locked {
        if cur < s {
            out.push((cur, s, None));
        }
        out.push((s, e, Some(lock)));
        cur = e;
    }
    if cur < end {
        out.push((cur, end, None));
    }
    out
}

/// Sets or clears MCL_FUTURE (and whether future locks are on fault).
pub fn set_future(on: bool, on_fault: bool) {
    let v = if on { FUTURE_ON | if on_fault { FUTURE_ON_FAULT } else { 0 } } else { 0 };
    FUTURE.store(v, Ordering::Relaxed);
}

/// How a new mapping is locked (MCL_FUTURE), if it is.
pub fn future() -> Option<Lock> {
    let v = FUTURE.load(Ordering::Relaxed);
    (v & FUTURE_ON != 0).then_some(Lock { on_fault: v & FUTURE_ON_FAULT != 0 })
}

/// Before a mapping of `len` bytes that will be locked (`MAP_LOCKED` asked, `explicit`, or
/// MCL_FUTURE): EPERM where the program may not lock (MAP_LOCKED only), EAGAIN past the limit
/// (Linux's `mlock_future_ok`).
pub fn new_mapping_allowed(len: u64, explicit: bool) -> Result<(), Errno> {
    if explicit {
        may_lock()?;
    }
    if (explicit || future().is_some()) && !within_limit(total().saturating_add(len)) {
        return Err(EAGAIN);
    }
    Ok(())
}

/// A mapping `[start, end)` was made: locked if asked (`explicit`) or under MCL_FUTURE.
pub fn new_mapping(start: u64, end: u64, explicit: bool) {
    let lock = future().or(explicit.then_some(Lock { on_fault: false }));
    if lock.is_some() {
        set(start, end, lock);
    }
}

/// `[start, end)` is being unmapped or replaced: its locks go with it.
pub fn release(start: u64, end: u64) {
    let mut map = RANGES.lock();
    if !map.is_empty() {
        map.take(start, end);
    }
}

/// Before mremap grows a locked mapping by `grows` bytes: EAGAIN past the limit, as Linux.
pub fn may_grow(old: u64, old_len: u64, grows: u64) -> Result<(), Errno> {
    if grows == 0 || old_len == 0 || !any(old + old_len - 1, old + old_len) {
        return Ok(());
    }
    if within_limit(total().saturating_add(grows)) {
        Ok(())
    } else {
        Err(EAGAIN)
    }
}

/// mremap made `[old, old + old_len)` into `[new, new + new_len)` (see
/// `fork_advice::moved`): the locks move with the memory, and the part grown from a locked
/// end is locked too. `keep_old`: the old range keeps its memory and its locks.
pub fn moved(old: u64, old_len: u64, new: u64, new_len: u64, keep_old: bool) {
    let mut map = RANGES.lock();
    if !map.is_empty() {
        map.carry(old, old_len, new, new_len, keep_old);
    }
}

/// A forked child: Linux's child inherits no locks, nor MCL_FUTURE.
pub fn after_fork() {
    clear();
    set_future(false, false);
}

/// exec: the new program starts without MCL_FUTURE (its old memory, locks and all, is gone).
pub fn after_exec() {
    clear();
    set_future(false, false);
}

/// ENOMEM where locking `[start, end)` would pass the limit: the bytes already locked there
/// count once (Linux's `count_mm_mlocked_page_nr`).
pub fn lock_allowed(start: u64, end: u64) -> Result<(), Errno> {
    let total = total();
    if within_limit(total.saturating_add(end - start)) {
        return Ok(());
    }
    if within_limit((total + (end - start)).saturating_sub(within(start, end))) {
        return Ok(());
    }
    Err(ENOMEM)
}
