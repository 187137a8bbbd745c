//! Disjoint address ranges of the program's memory, each with a value: what the kernel
//! remembers of parts of it beside the page tables (which file a private mapping was read from,
//! `private_files`; madvise's fork advice, `fork_advice`). The records go with the memory, so
//! both cut ranges where an munmap, mremap or madvise begins or ends.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

/// A range's value.
pub trait Value: Copy {
    /// The value of the part that begins `delta` bytes into a range with this one (a file
    /// offset moves along; most values stay as they are).
    fn skip(self, _delta: u64) -> Self {
        self
    }
}

/// Ranges by start address: (end, value).
pub struct RangeMap<V> {
    map: BTreeMap<u64, (u64, V)>,
}

impl<V: Value> RangeMap<V> {
    pub const fn new() -> Self {
        RangeMap { map: BTreeMap::new() }
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Records `[start, end)` with `value`, over whatever started at `start` (the caller took
    /// the range out first).
    pub fn insert(&mut self, start: u64, end: u64, value: V) {
        self.map.insert(start, (end, value));
    }

    /// Splits the ranges that stick out of `[start, end)` at its ends and returns those inside
    /// it, (start, end, value) in address order; they stay recorded.
    pub fn cut(&mut self, start: u64, end: u64) -> Vec<(u64, u64, V)> {
        for at in [start, end] {
            if let Some((&s, &(e, v))) = self.map.range(..at).next_back().filter(|(_, r)| r.0 > at) {
                self.map.insert(s, (at, v));
                self.map.insert(at, (e, v.skip(at - s)));
            }
        }
        self.map.range(start..end).map(|(&s, &(e, v))| (s, e, v)).collect()
    }

    /// `cut`, and the ranges inside `[start, end)` are forgotten.
    pub fn take(&mut self, start: u64, end: u64) -> Vec<(u64, u64, V)> {
        let inside = self.cut(start, end);
        for &(s, _, _) in &inside {
            self.map.remove(&s);
        }
        inside
    }

    /// The ranges that overlap `[start, end)`, cut to it (without splitting the records), in
    /// address order.
    pub fn overlapping(&self, start: u64, end: u64) -> Vec<(u64, u64, V)> {
        let mut parts: Vec<(u64, u64, V)> = self
            .map
            .range(..end)
            .rev()
            .take_while(|(_, r)| r.0 > start)
            .map(|(&s, &(e, v))| (s.max(start), e.min(end), v.skip(s.max(start) - s)))
            .collect();
        parts.reverse();
        parts
    }

    /// mremap made `[old, old + old_len)` into `[new, new + new_len)` (grown in place when
    /// `new == old`): the ranges move with the memory (cut where a shrunk mapping ends), and the
    /// part grown from a recorded end gets that end's value, as Linux grows a mapping, flags
    /// and all. `keep_old`: the old range keeps its memory and its records (MREMAP_DONTUNMAP of
    /// shared memory, a second mapping made with an old length of 0); otherwise they go.
    pub fn carry(&mut self, old: u64, old_len: u64, new: u64, new_len: u64, keep_old: bool) {
        let mut last = None;
        for (s, e, v) in self.take(old, old + old_len) {
            if keep_old {
                self.insert(s, e, v);
            }
            if s - old < new_len {
                let at = new + (s - old);
                self.insert(at, at + (e - s).min(new_len - (s - old)), v);
            }
            if e == old + old_len {
                last = Some(v);
            }
        }
        if let Some(v) = last.filter(|_| new_len > old_len) {
            self.insert(new + old_len, new + new_len, v);
        }
    }

    /// Every range, in address order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64, V)> + '_ {
        self.map.iter().map(|(&s, &(e, v))| (s, e, v))
    }

    /// Every range's value, to change in place.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.map.values_mut().map(|r| &mut r.1)
    }
}
