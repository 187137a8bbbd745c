//! An allocator of exact page runs for the program's memory.
//!
//! Free memory is a set of disjoint, page-aligned extents kept in two ordered maps on the
//! kernel heap: by address (to merge neighbours and to take a given range) and by size (to find
//! the smallest extent that fits). Nothing is ever written into the managed memory itself, so
//! memory the program gets holds no allocator bookkeeping, and memory never handed out stays
//! untouched (on the host too). A request takes exactly the pages it asks for: no rounding to
//! a power of two, so the program can use the whole pool.
//!
//! This file depends on nothing but `core` and `alloc` so the host test suite can include it.

use alloc::collections::{BTreeMap, BTreeSet};

pub const PAGE: u64 = 4096;

pub struct PageRuns {
    /// Free extents: start -> end.
    by_addr: BTreeMap<u64, u64>,
    /// The same extents as (length, start): smallest first, lowest address among equals.
    by_size: BTreeSet<(u64, u64)>,
    free: u64,
    total: u64,
}

impl Default for PageRuns {
    fn default() -> Self {
        Self::new()
    }
}

impl PageRuns {
    pub const fn new() -> PageRuns {
        PageRuns { by_addr: BTreeMap::new(), by_size: BTreeSet::new(), free: 0, total: 0 }
    }

    /// Adds `[start, end)` (rounded inwards to pages) to the managed memory, as free. It must
    /// not overlap memory already managed.
    pub fn add(&mut self, start: u64, end: u64) {
        let start = start.next_multiple_of(PAGE);
        let end = end & !(PAGE - 1);
        if start < end {
            self.total += end - start;
            self.give_back(start, end);
        }
    }

    /// Bytes currently free.
    pub fn free_bytes(&self) -> u64 {
        self.free
    }

    /// Bytes managed, free or not.
    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    /// Takes `len` bytes (a multiple of the page size, not 0) starting at a multiple of `align`
    /// (a power of two, at least a page) from the smallest free extent where they fit.
    pub fn alloc(&mut self, len: u64, align: u64) -> Option<u64> {
        self.alloc_at_phase(len, align, 0)
    }

    /// `alloc` at an address that is `phase` past a multiple of `align` (`phase` taken modulo
    /// `align`; `len.wrapping_neg()` aligns the end instead of the start).
    pub fn alloc_at_phase(&mut self, len: u64, align: u64, phase: u64) -> Option<u64> {
        debug_assert!(len > 0 && len.is_multiple_of(PAGE) && align.is_power_of_two() && align >= PAGE);
        let at = self.by_size.range((len, 0)..).find_map(|&(size, start)| {
            let at = start.checked_add(phase.wrapping_sub(start) & (align - 1))?;
            (at.checked_add(len)? <= start + size).then_some(at)
        })?;
        self.take_from_free(at, at + len);
        Some(at)
    }

    /// The lowest address of a free run of `len` bytes (a multiple of the page size, not 0)
    /// that ends at or below `limit` (mmap's MAP_32BIT); nothing is taken.
    pub fn lowest_fit_below(&self, len: u64, limit: u64) -> Option<u64> {
        self.by_addr
            .range(..limit)
            .find(|&(&s, &e)| e.min(limit).checked_sub(s).is_some_and(|room| room >= len))
            .map(|(&s, _)| s)
    }

    /// Whether every page of `[start, end)` (page aligned) is free.
    pub fn is_free(&self, start: u64, end: u64) -> bool {
        start >= end || self.extent_containing(start).is_some_and(|(_, e)| e >= end)
    }

    /// Takes `[start, end)` (page aligned) if all of it is free; otherwise changes nothing and
    /// returns false.
    pub fn take(&mut self, start: u64, end: u64) -> bool {
        if start >= end || !self.is_free(start, end) {
            return false;
        }
        self.take_from_free(start, end);
        true
    }

    /// Returns `[start, end)` (page aligned, managed, not free) to the free memory, merged with
    /// its free neighbours.
    pub fn give_back(&mut self, mut start: u64, mut end: u64) {
        if start >= end {
            return;
        }
        debug_assert!(start.is_multiple_of(PAGE) && end.is_multiple_of(PAGE));
        debug_assert!(
            self.by_addr.range(..end).next_back().is_none_or(|(_, &e)| e <= start),
            "page runs: {start:#x}..{end:#x} is already partly free"
        );
        self.free += end - start;
        // Free neighbours merge in; their bytes are already counted as free.
        if let Some((&s, &e)) = self.by_addr.range(..start).next_back() {
            if e == start {
                self.remove_extent(s, e);
                start = s;
            }
        }
        if let Some(&e) = self.by_addr.get(&end) {
            self.remove_extent(end, e);
            end = e;
        }
        self.by_addr.insert(start, end);
        self.by_size.insert((end - start, start));
    }

    /// The free extent containing `addr`, if any.
    pub fn extent_containing(&self, addr: u64) -> Option<(u64, u64)> {
        self.by_addr.range(..=addr).next_back().map(|(&s, &e)| (s, e)).filter(|&(_, e)| e > addr)
    }

    /// Takes `[start, end)`, which lies inside one free extent.
    fn take_from_free(&mut self, start: u64, end: u64) {
        let (s, e) = self.extent_containing(start).expect("page runs: taking memory that is not free");
        self.remove_extent(s, e);
        self.free -= end - start;
        if s < start {
            self.by_addr.insert(s, start);
            self.by_size.insert((start - s, s));
        }
        if end < e {
            self.by_addr.insert(end, e);
            self.by_size.insert((e - end, end));
        }
    }

    /// Drops the extent `[s, e)` from both maps (the free count is the caller's business).
    fn remove_extent(&mut self, s: u64, e: u64) {
        self.by_addr.remove(&s);
        self.by_size.remove(&(e - s, s));
    }
}
