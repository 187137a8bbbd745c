//! A small sorted set of excluded physical ranges, used at boot to find where each zone's
//! allocator metadata can go and which parts of the zone are free.
//!
//! Depends on nothing but `core` (the host tests include it). Sizes are tiny (a dozen
//! ranges), so insertion sort and linear walks are the cheapest code.

/// At most `N` sorted (by start), possibly overlapping, half-open ranges.
pub struct Excluded<const N: usize> {
    ranges: [(u64, u64); N],
    len: usize,
}

impl<const N: usize> Excluded<N> {
    pub const fn new() -> Self {
        Excluded { ranges: [(0, 0); N], len: 0 }
    }

    /// Adds `[start, end)` widened to whole `align`-sized units; empty ranges are ignored.
    /// Panics if the set is full (a boot-time configuration bug).
    pub fn add(&mut self, start: u64, end: u64, align: u64) {
        if start >= end {
            return;
        }
        let start = start & !(align - 1);
        let end = end.saturating_add(align - 1) & !(align - 1);
        assert!(self.len < N, "too many excluded memory ranges");
        let mut i = self.len;
        while i > 0 && self.ranges[i - 1].0 > start {
            self.ranges[i] = self.ranges[i - 1];
            i -= 1;
        }
        self.ranges[i] = (start, end);
        self.len += 1;
    }

    /// Removes the range `add(start, end, align)` added (one of them, if added twice); false if
    /// there is none.
    pub fn remove(&mut self, start: u64, end: u64, align: u64) -> bool {
        let range = (start & !(align - 1), end.saturating_add(align - 1) & !(align - 1));
        let Some(i) = self.ranges[..self.len].iter().position(|&r| r == range) else { return false };
        self.ranges.copy_within(i + 1..self.len, i);
        self.len -= 1;
        true
    }

    /// The lowest `align`-aligned address `a` with `[a, a + size)` inside `[lo, hi)` and
    /// clear of every excluded range.
    pub fn first_fit(&self, lo: u64, hi: u64, size: u64, align: u64) -> Option<u64> {
        let mut cur = lo.checked_add(align - 1)? & !(align - 1);
        for &(start, end) in &self.ranges[..self.len] {
            if start >= cur.checked_add(size)? {
                break;
            }
            if end > cur {
                cur = end.checked_add(align - 1)? & !(align - 1);
            }
        }
        (cur.checked_add(size)? <= hi).then_some(cur)
    }

    /// Calls `f(start, end)` for each maximal part of `[lo, hi)` that no range excludes.
    pub fn for_each_gap(&self, lo: u64, hi: u64, mut f: impl FnMut(u64, u64)) {
        let mut cur = lo;
        for &(start, end) in &self.ranges[..self.len] {
            if start >= hi {
                break;
            }
            if start > cur {
                f(cur, start);
            }
            cur = cur.max(end);
        }
        if cur < hi {
            f(cur, hi);
        }
    }
}
