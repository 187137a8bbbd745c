//! Which pages of the program's pool are mapped: one bit per 4 KiB page (`hrt_abi::UserMap`),
//! in kernel memory the program cannot write. `usermem` sets and clears bits whenever it records
//! or unmaps a region; `uaccess` checks the program's pointers against it, and the monitor reads
//! the same bitmap to check the pointers of forwarded calls, so both give EFAULT exactly where
//! a range leaves the program's mappings (as Linux does), not only where it leaves its pool.
//!
//! A second bitmap of the same shape marks the pages without PROT_WRITE (`protect` keeps it):
//! the monitor writes the answers of forwarded calls (a `read`'s data, a `stat` buffer) only
//! into mapped pages that are not read-only, as Linux's copies to the program fault there.
//! Its bits mean something only for mapped pages (every mapping sets them: `protect`); those of
//! free memory are whatever they were, zero from boot.
//!
//! A third one marks mapped pages without PROT_READ (execute-only, write-only), which only
//! other processes' cross-memory attach looks at (Linux's refuses them; the program's own
//! accesses and the monitor's copies read them, as the hardware does). It is written only once
//! such a protection was ever set, and never on unmap: a stale bit on an unmapped page counts
//! for nothing, and the pool resets protections (`protect::reset`) wherever it hands memory out.

use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use hrt_abi::USER_MAP_PAGE as PAGE;

/// The bitmap's words (kernel pointer), the first address covered and the number of pages.
static WORDS: AtomicUsize = AtomicUsize::new(0);
/// The read-only bitmap's words (kernel pointer; same shape).
static READ_ONLY: AtomicUsize = AtomicUsize::new(0);
/// The unreadable bitmap's words (kernel pointer; same shape), and whether a bit was ever set.
static UNREADABLE: AtomicUsize = AtomicUsize::new(0);
static ANY_UNREADABLE: AtomicBool = AtomicBool::new(false);
static BASE: AtomicU64 = AtomicU64::new(0);
static PAGES: AtomicU64 = AtomicU64::new(0);

/// Allocates the (zeroed: nothing mapped) bitmap for the pool `[lo, hi)` and tells the monitor
/// where it is.
pub fn init(lo: u64, hi: u64) {
    let pages = (hi - lo) / PAGE;
    let bytes = pages.div_ceil(64) * 8;
    let placed = crate::bootinfo::get().page_map;
    if placed.pages == pages && placed.base == lo && placed.bytes >= bytes {
        // The monitor's placement (`BootInfo::page_map`): zero, and known to it already.
        for (which, at) in [(&WORDS, placed.bitmap), (&READ_ONLY, placed.read_only), (&UNREADABLE, placed.unreadable)] {
            which.store(crate::mem::phys_to_virt(at) as usize, Ordering::Relaxed);
        }
        BASE.store(lo, Ordering::Relaxed);
        PAGES.store(pages, Ordering::Relaxed);
        return;
    }
    // Memory nothing has written, if the kernel's share has it: clearing 3 x 512 KiB (a
    // 16 GiB pool) took ~0.25 ms of the start and made the host fault all of it in, where the
    // bits of the little memory a program uses touch a few pages.
    let stride = bytes.next_multiple_of(PAGE);
    let fresh = crate::mem::take_fresh(3 * stride);
    let order = crate::mem::order_for(bytes as usize);
    let alloc = |i: u64| match fresh {
        Some(base) => base + i * stride,
        None => {
            let phys = crate::mem::alloc_pages(order, None).expect("no memory for the program's page map");
            super::usermem::zero(phys, bytes);
            phys
        }
    };
    for (i, which) in [&WORDS, &READ_ONLY, &UNREADABLE].into_iter().enumerate() {
        which.store(crate::mem::phys_to_virt(alloc(i as u64)) as usize, Ordering::Relaxed);
    }
    BASE.store(lo, Ordering::Relaxed);
    PAGES.store(pages, Ordering::Relaxed);
    announce();
}

/// Tells the monitor where the bitmaps are (`nr::USER_MAP`).
fn announce() {
    let pages = PAGES.load(Ordering::Relaxed);
    let bytes = pages.div_ceil(64) * 8;
    let phys = |which: &AtomicUsize| crate::mem::virt_to_phys(which.load(Ordering::Relaxed) as *const u8);
    let (mapped, read_only, unreadable) = (phys(&WORDS), phys(&READ_ONLY), phys(&UNREADABLE));
    let lo = BASE.load(Ordering::Relaxed);
    crate::arch::hypercall::call(hrt_abi::nr::USER_MAP, &[mapped, bytes, lo, pages, read_only, unreadable]);
}

fn words() -> &'static [AtomicU64] {
    bitmap(&WORDS)
}

fn bitmap(which: &AtomicUsize) -> &'static [AtomicU64] {
    let p = which.load(Ordering::Relaxed) as *const AtomicU64;
    if p.is_null() {
        return &[];
    }
    let n = PAGES.load(Ordering::Relaxed).div_ceil(64) as usize;
    // SAFETY: init allocated n words for the bitmap and never frees them.
    unsafe { core::slice::from_raw_parts(p, n) }
}

/// Page indices `[first, last)` of `[start, end)` (page-aligned outward), clipped to the pool.
fn pages_of(start: u64, end: u64) -> (u64, u64) {
    let base = BASE.load(Ordering::Relaxed);
    let pages = PAGES.load(Ordering::Relaxed);
    let first = (start.max(base) - base) / PAGE;
    let last = (end.max(base) - base).div_ceil(PAGE);
    (first.min(pages), last.min(pages))
}

/// The bits of word `w` that fall in pages `[first, last)`.
fn word_mask(w: u64, first: u64, last: u64) -> u64 {
    let lo = first.max(w * 64) - w * 64;
    let hi = last.min(w * 64 + 64) - w * 64;
    if hi - lo == 64 {
        u64::MAX
    } else {
        ((1u64 << (hi - lo)) - 1) << lo
    }
}

/// Above this many whole words, `set` has the monitor fill them (one hypercall) instead of
/// updating word by word in emulated ring 0.
const BULK_WORDS: u64 = 16;
/// The same where kernel code runs natively (ring-3 mode): a hypercall is a VM exit (25-35 us
/// on a PVM host), as long as writing a few thousand words and taking the first-touch faults
/// of the bitmap pages they lie in. A mapping of 1 GiB (4,096 words) or less is set here: a Go
/// program reserves and returns 64 MiB ranges by the dozen as it starts (one exit each before).
const BULK_WORDS_NATIVE: u64 = 4096;

fn bulk_words() -> u64 {
    if crate::arch::ring3::kernel_runs_natively() {
        BULK_WORDS_NATIVE
    } else {
        BULK_WORDS
    }
}

/// Marks the pages of `[start, end)` mapped (`on`) or unmapped.
pub fn set(start: u64, end: u64, on: bool) {
    set_in(words(), start, end, on);
}

/// Marks the pages of `[start, end)` read-only (`on`: no PROT_WRITE) or not.
pub fn set_read_only(start: u64, end: u64, on: bool) {
    set_in(bitmap(&READ_ONLY), start, end, on);
}

/// Marks the pages of `[start, end)` mapped without PROT_READ (`on`) or readable. Costs nothing
/// (no bitmap write) until a page was ever marked.
pub fn set_unreadable(start: u64, end: u64, on: bool) {
    if on {
        ANY_UNREADABLE.store(true, Ordering::Relaxed);
    } else if !ANY_UNREADABLE.load(Ordering::Relaxed) {
        return;
    }
    set_in(bitmap(&UNREADABLE), start, end, on);
}

fn set_in(words: &[AtomicU64], start: u64, end: u64, on: bool) {
    let (first, last) = pages_of(start, end);
    if first >= last || words.is_empty() {
        return;
    }
    let update = |w: u64| {
        let mask = word_mask(w, first, last);
        if on {
            words[w as usize].fetch_or(mask, Ordering::Relaxed);
        } else {
            words[w as usize].fetch_and(!mask, Ordering::Relaxed);
        }
    };
    // Whole words [inner_lo, inner_hi): the pages are this caller's (just allocated or being
    // unmapped), so no one else changes these bits meanwhile and plain copies are fine.
    let (inner_lo, inner_hi) = (first.div_ceil(64), last / 64);
    if inner_hi <= inner_lo + BULK_WORDS {
        for w in first / 64..last.div_ceil(64) {
            update(w);
        }
        return;
    }
    if inner_hi > inner_lo + bulk_words() {
        let at = words.as_ptr() as u64 + inner_lo * 8;
        let len = (inner_hi - inner_lo) * 8;
        if on {
            crate::arch::hypercall::call(hrt_abi::nr::MEM_FILL, &[at, len / 8, u64::MAX, 0]);
        } else {
            super::usermem::zero(at, len);
        }
    } else {
        let fill = if on { u64::MAX } else { 0 };
        for word in &words[inner_lo as usize..inner_hi as usize] {
            word.store(fill, Ordering::Relaxed);
        }
    }
    if first < inner_lo * 64 {
        update(first / 64);
    }
    if last > inner_hi * 64 {
        update(inner_hi);
    }
}

/// `[start, end)` in runs that are all unreadable (true: mapped without PROT_READ) or all not:
/// what `/proc/self/maps` shows of protections the page tables cannot hold (write-only is
/// read-write there). One run, readable, while no page was ever marked.
pub fn readability_runs(start: u64, end: u64) -> alloc::vec::Vec<(u64, u64, bool)> {
    let mut out = alloc::vec::Vec::new();
    if start >= end {
        return out;
    }
    if !ANY_UNREADABLE.load(Ordering::Relaxed) {
        out.push((start, end, false));
        return out;
    }
    let (base, words) = (BASE.load(Ordering::Relaxed), bitmap(&UNREADABLE));
    let (first, last) = pages_of(start, end);
    let bit =
        |page: u64| words.get((page / 64) as usize).is_some_and(|w| w.load(Ordering::Relaxed) & 1 << (page % 64) != 0);
    let mut page = first;
    let mut from = start;
    while page < last {
        let w = words.get((page / 64) as usize).map_or(0, |w| w.load(Ordering::Relaxed));
        // A whole word of one kind: no change of kind inside it.
        let mask = word_mask(page / 64, page, last);
        let uniform = w & mask == 0 || w & mask == mask;
        let next = if uniform { ((page / 64) + 1) * 64 } else { page + 1 };
        let next = next.min(last);
        if page > first && bit(page) != bit(page - 1) {
            let at = base + page * PAGE;
            out.push((from, at, bit(page - 1)));
            from = at;
        }
        page = next;
    }
    out.push((from, end, first < last && bit(last - 1)));
    out
}

/// How many bytes from `addr` (up to `len`) lie in mapped pages: the whole range if all of it
/// is mapped, else the distance to the first unmapped page.
pub fn mapped_len(addr: u64, len: u64) -> u64 {
    let base = BASE.load(Ordering::Relaxed);
    let pages = PAGES.load(Ordering::Relaxed);
    if addr < base || len == 0 {
        return 0;
    }
    let first = (addr - base) / PAGE;
    let end = addr.saturating_add(len);
    let last = ((end - base).div_ceil(PAGE)).min(pages);
    let words = words();
    let mut page = first;
    while page < last {
        let w = page / 64;
        let mask = word_mask(w, page, last);
        let bits = words[w as usize].load(Ordering::Relaxed);
        if bits & mask != mask {
            let missing = (!bits & mask).trailing_zeros() as u64;
            let stop = base + (w * 64 + missing) * PAGE;
            return stop.saturating_sub(addr).min(len);
        }
        page = (w + 1) * 64;
    }
    (base + last * PAGE).saturating_sub(addr).min(len)
}

/// Whether every page of `[addr, addr + len)` is mapped (an empty range always is). Ranges
/// within one word of the map (most system-call arguments) take a short path.
pub fn is_mapped(addr: u64, len: u64) -> bool {
    if len == 0 {
        return true;
    }
    let base = BASE.load(Ordering::Relaxed);
    let Some(last_byte) = addr.checked_add(len - 1) else { return false };
    if addr < base {
        return false;
    }
    let (first, last) = ((addr - base) / PAGE, (last_byte - base) / PAGE);
    if last >= PAGES.load(Ordering::Relaxed) {
        return false;
    }
    if first / 64 == last / 64 {
        let mask = word_mask(first / 64, first, last + 1);
        return words()[(first / 64) as usize].load(Ordering::Relaxed) & mask == mask;
    }
    mapped_len(addr, len) == len
}

/// A forked child: tells the child's monitor where the (copied) maps are.
/// `monitor_has_it`: the child's monitor took the map placed at boot as its own already
/// (`fork_ready::USER_MAP`).
pub fn after_fork(monitor_has_it: bool) {
    let placed = crate::bootinfo::get().page_map;
    let ours =
        placed.pages > 0 && crate::mem::virt_to_phys(WORDS.load(Ordering::Relaxed) as *const u8) == placed.bitmap;
    if PAGES.load(Ordering::Relaxed) != 0 && !(monitor_has_it && ours) {
        announce();
    }
}
