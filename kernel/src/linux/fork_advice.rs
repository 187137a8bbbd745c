//! madvise's advice for forks: ranges a forked child finds zeroed (`MADV_WIPEONFORK`, private
//! anonymous memory only) or not mapped at all (`MADV_DONTFORK`), undone by MADV_KEEPONFORK and
//! MADV_DOFORK.
//!
//! The host fork copies all of guest RAM, so the child's kernel applies them itself, before
//! any of the program's threads runs there (`after_fork`): it zeroes the wiped ranges (they keep
//! the advice, as the child's Linux mapping keeps its flag) and unmaps the others. The advice
//! goes with the memory, as a Linux mapping's flags do: unmapped or replaced (`release`),
//! moved or grown by mremap (`moved`); exec unmaps everything.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::sync::IrqSpinLock;

#[derive(Clone, Copy, PartialEq, Eq)]
struct Advice {
    end: u64,
    wipe: bool,
    dont_fork: bool,
}

static RANGES: IrqSpinLock<BTreeMap<u64, Advice>> = IrqSpinLock::new(BTreeMap::new());

/// Which advice to change: each `Some` sets (true) or clears (false) its flag.
pub struct Change {
    pub wipe: Option<bool>,
    pub dont_fork: Option<bool>,
}

/// Splits the ranges that stick out of `[start, end)` and returns those inside it.
fn cut(map: &mut BTreeMap<u64, Advice>, start: u64, end: u64) -> Vec<(u64, Advice)> {
    for at in [start, end] {
        if let Some((&s, &a)) = map.range(..at).next_back().filter(|(_, a)| a.end > at) {
            map.insert(s, Advice { end: at, ..a });
            map.insert(at, a);
        }
    }
    map.range(start..end).map(|(&s, &a)| (s, a)).collect()
}

/// madvise changed the advice of `[start, end)` (mapped memory).
pub fn change(start: u64, end: u64, c: Change) {
    let mut map = RANGES.lock();
    let had = cut(&mut map, start, end);
    for &(s, _) in &had {
        map.remove(&s);
    }
    // Each part keeps what the change leaves alone: the gaps between old ranges had nothing.
    let mut parts: Vec<(u64, u64, Advice)> = Vec::new();
    let mut cur = start;
    for (s, a) in had.into_iter().chain(core::iter::once((end, Advice { end, wipe: false, dont_fork: false }))) {
        if cur < s {
            parts.push((cur, s, Advice { end: s, wipe: false, dont_fork: false }));
        }
        if s < end {
            parts.push((s, a.end, a));
        }
        cur = a.end.max(s);
    }
    for (s, e, a) in parts {
        let a = Advice { end: e, wipe: c.wipe.unwrap_or(a.wipe), dont_fork: c.dont_fork.unwrap_or(a.dont_fork) };
        if a.wipe || a.dont_fork {
            map.insert(s, a);
        }
    }
}

/// `[start, end)` is being unmapped or replaced: its advice goes with it.
pub fn release(start: u64, end: u64) {
    let mut map = RANGES.lock();
    if map.is_empty() {
        return;
    }
    for (s, _) in cut(&mut map, start, end) {
        map.remove(&s);
    }
}

/// mremap made `[old, old + old_len)` into `[new, new + new_len)` (grown in place when
/// `new == old`; moved otherwise, the old range is unmapped next, which forgets it there). The
/// advice moves with the memory, and a part grown onto a range with advice gets it too (Linux
/// grows the mapping, flags and all).
pub fn moved(old: u64, old_len: u64, new: u64, new_len: u64) {
    let mut map = RANGES.lock();
    if map.is_empty() {
        return;
    }
    let had = cut(&mut map, old, old + old_len);
    let mut last = None;
    for &(s, a) in &had {
        let at = new + (s - old);
        let moved = Advice { end: at + (a.end - s), ..a };
        map.insert(at, moved);
        if a.end == old + old_len {
            last = Some(moved);
        }
    }
    if let Some(a) = last.filter(|_| new_len > old_len) {
        map.insert(new + old_len, Advice { end: new + new_len, ..a });
    }
}

/// A forked child, before any of the program's threads runs: wiped ranges read zero, and the
/// ranges not to fork are not mapped.
pub fn after_fork() {
    let ranges: Vec<(u64, Advice)> = RANGES.lock().iter().map(|(&s, &a)| (s, a)).collect();
    for (s, a) in ranges {
        if a.dont_fork {
            super::usermem::unmap(s, a.end);
        } else if a.wipe {
            super::usermem::zero(s, a.end - s);
        }
    }
}
