//! madvise's advice for forks: ranges a forked child finds zeroed (`MADV_WIPEONFORK`, private
//! anonymous memory only) or not mapped at all (`MADV_DONTFORK`), undone by MADV_KEEPONFORK and
//! MADV_DOFORK.
//!
//! The host fork copies all of guest RAM, so the child's kernel applies them itself, before
//! any of the program's threads runs there (`after_fork`): it zeroes the wiped ranges (they keep
//! the advice, as the child's Linux mapping keeps its flag) and unmaps the others. The advice
//! goes with the memory, as a Linux mapping's flags do: unmapped or replaced (`release`),
//! moved or grown by mremap (`moved`); exec unmaps everything.

use alloc::vec::Vec;

use crate::linux::range_map::{RangeMap, Value};
use crate::sync::IrqSpinLock;

#[derive(Clone, Copy, PartialEq, Eq, Default)]
struct Advice {
    wipe: bool,
    dont_fork: bool,
}

impl Value for Advice {}

static RANGES: IrqSpinLock<RangeMap<Advice>> = IrqSpinLock::new(RangeMap::new());

/// Which advice to change: each `Some` sets (true) or clears (false) its flag.
pub struct Change {
    pub wipe: Option<bool>,
    pub dont_fork: Option<bool>,
}

/// madvise changed the advice of `[start, end)` (mapped memory).
pub fn change(start: u64, end: u64, c: Change) {
    let mut map = RANGES.lock();
    let had = map.take(start, end);
    // Each part keeps what the change leaves alone: the gaps between old ranges had nothing.
    let mut parts: Vec<(u64, u64, Advice)> = Vec::new();
    let mut cur = start;
    for (s, e, a) in had.into_iter().chain(core::iter::once((end, end, Advice::default()))) {
        if cur < s {
            parts.push((cur, s, Advice::default()));
        }
        if s < end {
            parts.push((s, e, a));
        }
        cur = e.max(s);
    }
    for (s, e, a) in parts {
        let a = Advice { wipe: c.wipe.unwrap_or(a.wipe), dont_fork: c.dont_fork.unwrap_or(a.dont_fork) };
        if a.wipe || a.dont_fork {
            map.insert(s, e, a);
        }
    }
}

/// `[start, end)` is being unmapped or replaced: its advice goes with it.
pub fn release(start: u64, end: u64) {
    let mut map = RANGES.lock();
    if !map.is_empty() {
        map.take(start, end);
    }
}

/// mremap made `[old, old + old_len)` into `[new, new + new_len)` (grown in place when
/// `new == old`; moved otherwise, the old range is unmapped next, which forgets it there). The
/// advice moves with the memory, and a part grown onto a range with advice gets it too (Linux
/// grows the mapping, flags and all).
pub fn moved(old: u64, old_len: u64, new: u64, new_len: u64) {
    carried(old, old_len, new, new_len, false)
}

/// `moved`, where the old range keeps its memory and its advice (MREMAP_DONTUNMAP of shared
/// memory, a second mapping of it made by mremap with an old length of 0): Linux's new mapping
/// takes the old one's flags.
pub fn copied(old: u64, old_len: u64, new: u64, new_len: u64) {
    carried(old, old_len, new, new_len, true)
}

fn carried(old: u64, old_len: u64, new: u64, new_len: u64, keep_old: bool) {
    let mut map = RANGES.lock();
    if !map.is_empty() {
        map.carry(old, old_len, new, new_len, keep_old);
    }
}

/// A forked child, before any of the program's threads runs: wiped ranges read zero, and the
/// ranges not to fork are not mapped.
pub fn after_fork() {
    let ranges: Vec<(u64, u64, Advice)> = RANGES.lock().iter().collect();
    for (s, e, a) in ranges {
        if a.dont_fork {
            super::usermem::unmap(s, e);
        } else if a.wipe {
            super::usermem::zero(s, e - s);
        }
    }
}
