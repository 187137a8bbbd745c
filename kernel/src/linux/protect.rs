//! Protections of the program's memory (mprotect, mmap's prot, stack guard gaps), enforced by
//! the page tables: PROT_NONE pages are not present, pages without PROT_WRITE are read-only,
//! pages without PROT_EXEC are execute-disabled where the CPU has NX.
//!
//! Memory the identity map hands out is readable, writable and executable, and stays so
//! unless a protection is set (fresh `mmap` with PROT_READ|PROT_WRITE leaves it that way: no
//! page-table change, which costs a lot in emulated ring 0). This table remembers every range
//! that differs from that default, so system calls can refuse kernel access to them (EFAULT,
//! as Linux) and `munmap` can restore the default before the memory is reused.

use alloc::collections::BTreeMap;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::arch::paging::{self, StaleTlb, UserAccess};
use crate::sync::SpinLock;

pub const PROT_READ: u64 = 1;
pub const PROT_WRITE: u64 = 2;
pub const PROT_EXEC: u64 = 4;
/// What every program page allows until told otherwise.
pub const DEFAULT: u8 = (PROT_READ | PROT_WRITE | PROT_EXEC) as u8;

/// start -> (end, prot) for ranges whose protection is not `DEFAULT`; disjoint.
static RANGES: SpinLock<BTreeMap<u64, (u64, u8)>> = SpinLock::new(BTreeMap::new());
/// Number of entries in `RANGES`, readable without the lock (the common case: none).
static COUNT: AtomicUsize = AtomicUsize::new(0);

fn access(prot: u8) -> UserAccess {
    let p = prot as u64;
    UserAccess {
        present: p & (PROT_READ | PROT_WRITE | PROT_EXEC) != 0,
        writable: p & PROT_WRITE != 0,
        executable: p & PROT_EXEC != 0 || prot == DEFAULT,
    }
}

/// Gives `[start, end)` (page-aligned program memory) the protection `prot` (PROT_* bits).
pub fn set(start: u64, end: u64, prot: u64) {
    change(start, end, prot, false);
}

/// `set` for memory that was free until now (a new mapping): no other CPU can have a use
/// for its TLB entries, so taking permissions away needs no shootdown. (Free pool memory is
/// mapped read-write for the program anyway; a program that touches memory it does not own
/// is not protected from itself.)
pub fn set_fresh(start: u64, end: u64, prot: u64) {
    change(start, end, prot, true);
}

fn change(start: u64, end: u64, prot: u64, fresh: bool) {
    let prot = (prot & (PROT_READ | PROT_WRITE | PROT_EXEC)) as u8;
    if start >= end || (prot == DEFAULT && COUNT.load(Ordering::Acquire) == 0) {
        return;
    }
    let mut ranges = RANGES.lock();
    // Cut [start, end) out of the table, keeping the parts of ranges outside it.
    let mut overlapping = alloc::vec::Vec::new();
    for (&s, &(e, p)) in ranges.range(..end).rev() {
        if e <= start {
            break;
        }
        overlapping.push((s, e, p));
    }
    if prot == DEFAULT && overlapping.is_empty() {
        return;
    }
    for &(s, e, p) in &overlapping {
        ranges.remove(&s);
        if s < start {
            ranges.insert(s, (start, p));
        }
        if e > end {
            ranges.insert(end, (e, p));
        }
    }
    if prot != DEFAULT {
        ranges.insert(start, (end, prot));
    }
    COUNT.store(ranges.len(), Ordering::Release);
    let mut stale = StaleTlb::new();
    let freed = if prot == DEFAULT {
        // Only the parts that differed change.
        let mut freed = alloc::vec::Vec::new();
        for &(s, e, _) in &overlapping {
            freed.extend(paging::protect_user(s.max(start), e.min(end), access(DEFAULT), &mut stale));
        }
        freed
    } else {
        paging::protect_user(start, end, access(prot), &mut stale)
    };
    drop(ranges);
    // A permission taken away must not survive in any TLB (nor a freed table in any
    // paging-structure cache); one that grew is fixed where it faults.
    if stale.needs_shootdown() && !(fresh && freed.is_empty()) {
        crate::arch::tlb::shoot_down(&stale, crate::cpu::count());
    } else {
        crate::arch::tlb::flush_here(&stale);
    }
    for table in freed {
        crate::mem::free_pages(table, 0);
    }
}

/// Restores the default protection of `[start, end)` (memory being unmapped or replaced).
pub fn reset(start: u64, end: u64) {
    set(start, end, DEFAULT as u64);
}

/// Whether the kernel may read (and, with `write`, write) `[start, end)` on the program's
/// behalf: no part of it is PROT_NONE (or, for writes, lacks PROT_WRITE).
pub fn allows(start: u64, end: u64, write: bool) -> bool {
    if COUNT.load(Ordering::Acquire) == 0 || start >= end {
        return true;
    }
    let ranges = RANGES.lock();
    for (_, &(e, p)) in ranges.range(..end).rev() {
        if e <= start {
            break;
        }
        let a = access(p);
        if !a.present || (write && !a.writable) {
            return false;
        }
    }
    true
}
