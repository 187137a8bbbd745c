//! The program's memory: a pool of user-accessible, identity-mapped memory reserved by the
//! monitor, managed by its own buddy allocator. mmap and brk hand out physical memory at once
//! (no demand paging), zeroed; munmap gives it back.
//!
//! Zeroing and copying of program memory go through the monitor (`MEM_ZERO`, `MEM_COPY`)
//! when they are large: host code does them at memory speed, where emulated ring 0 would take
//! about a microsecond per 8 bytes.

use alloc::collections::BTreeMap;
use core::sync::atomic::{AtomicU64, Ordering};

use super::errno::{Errno, EINVAL, ENOMEM};
use crate::arch::hypercall;
use crate::mem::buddy::{Buddy, MAX_ORDER, PAGE_SIZE};
use crate::sync::IrqSpinLock;

static POOL: IrqSpinLock<Buddy> = IrqSpinLock::new(Buddy::empty());
/// Mapped regions of the program: start -> end (page-aligned).
static REGIONS: IrqSpinLock<BTreeMap<u64, u64>> = IrqSpinLock::new(BTreeMap::new());
static POOL_LO: AtomicU64 = AtomicU64::new(0);
static POOL_HI: AtomicU64 = AtomicU64::new(0);

pub const PAGE: u64 = PAGE_SIZE as u64;

pub fn page_up(v: u64) -> u64 {
    v.div_ceil(PAGE) * PAGE
}

/// Sets up the pool over `[lo, hi)`.
pub fn init(lo: u64, hi: u64) {
    let meta_bytes = Buddy::metadata_bytes((hi - lo) as usize);
    let order = crate::mem::order_for(meta_bytes);
    let meta = crate::mem::alloc_pages(order, None).expect("no memory for the program's allocator");
    zero(meta, meta_bytes as u64);
    let mut pool = POOL.lock();
    // SAFETY: the monitor reserved [lo, hi) for the program; the metadata is ours and zeroed.
    unsafe {
        pool.init(lo as usize, (hi - lo) as usize, crate::mem::phys_to_virt(meta), true);
        // Only RAM: the span may contain the hole below 4 GiB.
        crate::mem::for_each_ram(lo, hi, |s, e| pool.add_free_range(s as usize, e as usize));
    }
    POOL_LO.store(lo, Ordering::Relaxed);
    POOL_HI.store(hi, Ordering::Relaxed);
    super::usermap::init(lo, hi);
}

pub fn pool_range() -> (u64, u64) {
    (POOL_LO.load(Ordering::Relaxed), POOL_HI.load(Ordering::Relaxed))
}

/// Whether `[start, end)` lies in the program's memory pool.
pub fn is_user_range(start: u64, end: u64) -> bool {
    let (lo, hi) = pool_range();
    start >= lo && end <= hi && start <= end && crate::mem::is_ram(start, end)
}

/// Zeroes program memory (through the monitor when that is faster).
pub fn zero(addr: u64, len: u64) {
    if len >= 4096 {
        hypercall::call(hrt_abi::nr::MEM_ZERO, &[addr, len]);
    } else {
        // SAFETY: callers pass memory they own.
        unsafe { core::ptr::write_bytes(addr as *mut u8, 0, len as usize) };
    }
}

/// Copies program memory (through the monitor when that is faster).
pub fn copy(dst: u64, src: u64, len: u64) {
    if len >= 4096 {
        hypercall::call(hrt_abi::nr::MEM_COPY, &[dst, src, len]);
    } else {
        // SAFETY: callers pass memory they own; ranges may overlap.
        unsafe { core::ptr::copy(src as *const u8, dst as *mut u8, len as usize) };
    }
}

fn record(start: u64, end: u64) {
    REGIONS.lock().insert(start, end);
    super::usermap::set(start, end, true);
}

/// Allocates `len` bytes (page-rounded) aligned to `align` (a power of two >= 4 KiB), zeroed.
pub fn alloc(len: u64, align: u64) -> Result<u64, Errno> {
    if len == 0 {
        return Err(EINVAL);
    }
    let len = page_up(len);
    let order = crate::mem::order_for(len.max(align) as usize);
    if order > MAX_ORDER {
        return alloc_large(len);
    }
    let block = POOL.lock().alloc(order).ok_or(ENOMEM)? as u64;
    let block_end = block + (PAGE << order);
    if block + len < block_end {
        // SAFETY: the tail of the block we just allocated is unused.
        unsafe { POOL.lock().free_pages((block + len) as usize, block_end as usize) };
    }
    zero(block, len);
    record(block, block + len);
    Ok(block)
}

/// Requests above the largest buddy block: find a free run by reserving candidates.
fn alloc_large(len: u64) -> Result<u64, Errno> {
    let (lo, hi) = pool_range();
    let step = PAGE << MAX_ORDER;
    let mut at = lo.div_ceil(step) * step;
    while at + len <= hi {
        if POOL.lock().reserve(at as usize, (at + len) as usize) {
            zero(at, len);
            record(at, at + len);
            return Ok(at);
        }
        at += step;
    }
    Err(ENOMEM)
}

/// Takes `[addr, addr + len)` at exactly that address; fails if any of it is in use.
pub fn alloc_fixed(addr: u64, len: u64) -> Result<u64, Errno> {
    let end = addr.checked_add(page_up(len)).ok_or(ENOMEM)?;
    if !is_user_range(addr, end) || !addr.is_multiple_of(PAGE) {
        return Err(ENOMEM);
    }
    if !POOL.lock().reserve(addr as usize, end as usize) {
        return Err(ENOMEM);
    }
    zero(addr, end - addr);
    record(addr, end);
    Ok(addr)
}

/// Reserves `[addr, addr + len)` like `alloc_fixed` but without zeroing it: for memory that is
/// still as the monitor handed it over (zero, and untouched on the host until the program
/// writes it), such as the window the break grows into.
pub fn reserve_fresh(addr: u64, len: u64) -> Result<u64, Errno> {
    let end = addr.checked_add(page_up(len)).ok_or(ENOMEM)?;
    if !is_user_range(addr, end) || !addr.is_multiple_of(PAGE) || !POOL.lock().reserve(addr as usize, end as usize) {
        return Err(ENOMEM);
    }
    // The break's window: its pages count as mapped in the page map only below the break
    // (`break_moved`), as Linux's heap ends at the break.
    REGIONS.lock().insert(addr, end);
    Ok(addr)
}

/// Page-map hook for brk: the break moved from `old` to `new`, and its window from `old_end` to
/// `new_end` (grown by `grow_in_place`, which marks what it adds). Only the pages below the
/// break count as mapped, so a range running past the break faults as on Linux.
pub fn break_moved(old: u64, new: u64, old_end: u64, new_end: u64) {
    let (o, n) = (page_up(old), page_up(new));
    if n > o {
        super::usermap::set(o, n, true);
    } else if n < o {
        super::usermap::set(n, o, false);
    }
    if new_end > old_end {
        super::usermap::set(n.max(old_end), new_end, false);
    }
}

/// Page-map hook for memory mapped again where a region already is (mmap MAP_FIXED).
pub fn mark_mapped(start: u64, end: u64) {
    super::usermap::set(start, end, true);
}

/// Whether every page of `[start, end)` is mapped.
pub fn is_mapped(start: u64, end: u64) -> bool {
    let regions = REGIONS.lock();
    let mut cur = start;
    while cur < end {
        match regions.range(..=cur).next_back() {
            Some((_, &e)) if e > cur => cur = e,
            _ => return false,
        }
    }
    true
}

/// Unmaps every mapped page of `[start, end)`; unmapped parts are ignored, as on Linux.
pub fn unmap(start: u64, end: u64) {
    let mut regions = REGIONS.lock();
    super::usermap::set(start, end, false);
    // Collect the overlapping regions, then split them.
    let mut overlapping = alloc::vec::Vec::new();
    for (&s, &e) in regions.range(..end) {
        if e > start {
            overlapping.push((s, e));
        }
    }
    for (s, e) in overlapping {
        regions.remove(&s);
        if s < start {
            regions.insert(s, start);
        }
        if e > end {
            regions.insert(end, e);
        }
        let (fs, fe) = (s.max(start), e.min(end));
        // SAFETY: [fs, fe) was a mapped part of the program's memory, now unmapped.
        unsafe { POOL.lock().free_pages(fs as usize, fe as usize) };
    }
}

/// Tries to extend the mapping that ends at `end` to `new_end` in place.
pub fn grow_in_place(end: u64, new_end: u64) -> bool {
    if !is_user_range(end, new_end) || !POOL.lock().reserve(end as usize, new_end as usize) {
        return false;
    }
    zero(end, new_end - end);
    super::usermap::set(end, new_end, true);
    let mut regions = REGIONS.lock();
    let start = regions.range(..end).next_back().filter(|(_, &e)| e == end).map(|(&s, _)| s);
    match start {
        Some(s) => {
            regions.insert(s, new_end);
        }
        None => {
            regions.insert(end, new_end);
        }
    }
    true
}

/// Free bytes in the pool (sysinfo, ENOMEM decisions).
pub fn free_bytes() -> u64 {
    POOL.lock().free_bytes() as u64
}

pub fn total_bytes() -> u64 {
    POOL.lock().total_bytes() as u64
}
