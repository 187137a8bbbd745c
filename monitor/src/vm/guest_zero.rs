//! `nr::MEM_ZERO`: clearing guest RAM the kernel gives back (munmap, MADV_DONTNEED, a lowered
//! break) without making the host allocate memory the guest never touched.
//!
//! Whole 2 MiB pages are given back to the host with `MADV_DONTNEED`: guest RAM is a private
//! anonymous mapping, so they read zero afterwards and cost the host nothing until written
//! again, and KVM drops its mappings of them through its MMU notifier. In the partial huge
//! pages at the ends, the 4 KiB pages the host has (`mincore`) are cleared with memset, so a
//! huge page the guest keeps using is not split (the guest would fault on its 4 KiB pieces
//! again); the pages it does not have are dropped instead of written, which would allocate
//! them (a whole huge page for glibc's guard page below a thread stack, given back with the
//! stack's unused part when the thread ends).

/// Host huge-page size: zeroing gives whole 2 MiB pages back to the host.
const HUGE_PAGE: usize = 2 << 20;
const PAGE: usize = 4096;

/// Zeroes `len` bytes of guest RAM at host address `dst`.
///
/// # Safety
/// `[dst, dst + len)` must lie inside guest RAM (page-aligned host mappings).
pub unsafe fn zero(dst: *mut u8, len: usize) {
    let start = dst as usize;
    let end = start + len;
    let (inner_start, inner_end) = (start.next_multiple_of(HUGE_PAGE), end & !(HUGE_PAGE - 1));
    if inner_start >= inner_end {
        // SAFETY: the caller's promise.
        unsafe { clear_partial(start, end) };
        return;
    }
    // SAFETY: the pieces lie inside [dst, dst + len), guest RAM (the caller's promise).
    unsafe {
        clear_partial(start, inner_start);
        clear_huge_pages(inner_start, inner_end);
        clear_partial(inner_end, end);
    }
}

/// A 2 MiB page with at most this many 4 KiB host pages (small host pages: the top of a thread
/// stack, `nr::SMALL_HOST_PAGES`) has them cleared in place instead of given back.
const CLEAR_IN_PLACE_MAX: usize = 16;

/// Clears the whole 2 MiB pages `[lo, hi)`: runs of them are given back to the host, except
/// a page of which the host has only a few 4 KiB pages, which are cleared in place. Giving a
/// page the guest has mapped back makes KVM drop the vCPUs' translations of it, and when the
/// service thread does that on another host CPU, the vCPU running there is kicked out of the
/// guest to flush them: a thread stack's `munmap` took 220-228 us so, against 197-202 us by
/// hypercall. Clearing the few touched pages needs no flush.
///
/// # Safety
/// `[lo, hi)` must be 2 MiB-aligned guest RAM.
unsafe fn clear_huge_pages(lo: usize, hi: usize) {
    let per_huge = HUGE_PAGE / PAGE;
    let mut resident = vec![0u8; (hi - lo) / PAGE];
    // SAFETY: the vector has one byte per page of the range, which is mapped.
    let known = unsafe { libc::mincore(lo as *mut libc::c_void, hi - lo, resident.as_mut_ptr()) } == 0;
    let mut run_from = lo;
    let mut at = lo;
    for pages in resident.chunks(per_huge) {
        let n = pages.iter().filter(|r| *r & 1 == 1).count();
        if known && (1..=CLEAR_IN_PLACE_MAX).contains(&n) {
            // SAFETY: parts of [lo, hi).
            unsafe {
                drop_or_memset(run_from, at);
                clear_pages(at, at + HUGE_PAGE);
            }
            run_from = at + HUGE_PAGE;
        }
        at += HUGE_PAGE;
    }
    // SAFETY: a part of [lo, hi).
    unsafe { drop_or_memset(run_from, hi) };
}

/// Gives `[from, to)` back to the host, or clears it if the host refused (nothing if empty).
///
/// # Safety
/// `[from, to)` must be page-aligned guest RAM.
unsafe fn drop_or_memset(from: usize, to: usize) {
    // SAFETY: the caller's promise.
    unsafe {
        if from < to && !drop_pages(from, to) {
            memset(from, to);
        }
    }
}

/// Zeroes `len` bytes of guest RAM at host address `dst`, giving every whole 4 KiB page back to
/// the host (`nr::MEM_ZERO_DROP`): no page is copied or cleared, only the partial pages at the
/// ends are. Splits the host huge pages the range covers in part.
///
/// # Safety
/// `[dst, dst + len)` must lie inside guest RAM (page-aligned host mappings).
pub unsafe fn zero_dropping(dst: *mut u8, len: usize) {
    // SAFETY: the range is guest RAM (the caller's promise).
    unsafe { by_pages(dst as usize, dst as usize + len, drop_or_memset) };
}

/// Zeroes `len` bytes of guest RAM at host address `dst`, keeping what the host has of it
/// (`nr::MEM_ZERO_KEEP`): the 4 KiB pages it has are cleared in place, up to `budget` bytes of
/// them, so the next touch finds them mapped; the pages it does not have, and all pages once
/// the budget is spent, are given back. Returns the bytes cleared in place.
///
/// # Safety
/// `[dst, dst + len)` must lie inside guest RAM (page-aligned host mappings).
pub unsafe fn zero_keeping(dst: *mut u8, len: usize, budget: usize) -> usize {
    let (start, end) = (dst as usize, dst as usize + len);
    let (lo, hi) = (start.next_multiple_of(PAGE), end & !(PAGE - 1));
    if lo >= hi {
        // SAFETY: the caller's promise.
        unsafe { memset(start, end) };
        return len;
    }
    // SAFETY: the partial pages at the ends, inside the range.
    unsafe {
        memset(start, lo);
        memset(hi, end);
    }
    let mut cleared = (lo - start) + (end - hi);
    // Residency a window at a time, so that a large range needs no large vector.
    const WINDOW: usize = 64 * HUGE_PAGE;
    let mut resident = vec![0u8; WINDOW / PAGE];
    let mut at = lo;
    while at < hi {
        let to = (at + WINDOW).min(hi);
        let left = budget.saturating_sub(cleared);
        let pages = &mut resident[..(to - at) / PAGE];
        // SAFETY: one byte per page of [at, to), which is mapped guest RAM.
        let known = left > 0 && unsafe { libc::mincore(at as *mut libc::c_void, to - at, pages.as_mut_ptr()) } == 0;
        if !known {
            // SAFETY: a part of the range.
            unsafe { drop_or_memset(at, to) };
            at = to;
            continue;
        }
        for (here, first, run) in runs(pages) {
            let (from, run_end) = (at + first * PAGE, at + (first + run) * PAGE);
            let keep = if here { (run_end - from).min(budget.saturating_sub(cleared)) & !(PAGE - 1) } else { 0 };
            // SAFETY: parts of [from, run_end), inside the range.
            unsafe {
                memset(from, from + keep);
                drop_or_memset(from + keep, run_end);
            }
            cleared += keep;
        }
        at = to;
    }
    cleared
}

/// Clears `[from, to)`: the bytes of the partial 4 KiB pages at its ends with memset, its
/// whole pages with `whole`.
///
/// # Safety
/// `[from, to)` must lie inside guest RAM; `whole` must clear the page-aligned range it gets.
unsafe fn by_pages(from: usize, to: usize, whole: unsafe fn(usize, usize)) {
    let (lo, hi) = (from.next_multiple_of(PAGE), to & !(PAGE - 1));
    // SAFETY: all inside [from, to) (the caller's promise).
    unsafe {
        if lo >= hi {
            memset(from, to);
            return;
        }
        memset(from, lo);
        whole(lo, hi);
        memset(hi, to);
    }
}

/// Clears `[from, to)`: the bytes of partial 4 KiB pages with memset, whole pages by what the
/// host has of them.
///
/// # Safety
/// `[from, to)` must lie inside guest RAM.
unsafe fn clear_partial(from: usize, to: usize) {
    // SAFETY: the caller's promise; `clear_pages` clears the whole pages it gets.
    unsafe { by_pages(from, to, clear_pages) };
}

/// Clears the whole 4 KiB pages `[lo, hi)`: runs of resident pages with memset, runs of pages
/// the host does not have (never touched, or swapped out) with `MADV_DONTNEED`, which leaves
/// them reading zero without allocating them.
///
/// # Safety
/// `[lo, hi)` must be page-aligned guest RAM.
unsafe fn clear_pages(lo: usize, hi: usize) {
    let mut resident = vec![0u8; (hi - lo) / PAGE];
    // SAFETY: the vector has one byte per page of the range, which is mapped.
    if unsafe { libc::mincore(lo as *mut libc::c_void, hi - lo, resident.as_mut_ptr()) } != 0 {
        // SAFETY: the caller's promise.
        unsafe { memset(lo, hi) };
        return;
    }
    for (here, first, run) in runs(&resident) {
        let (from, to) = (lo + first * PAGE, lo + (first + run) * PAGE);
        // SAFETY: a part of [lo, hi).
        unsafe {
            if here || !drop_pages(from, to) {
                memset(from, to);
            }
        }
    }
}

/// The runs of a `mincore` vector: (resident, index of the first page, number of pages).
fn runs(pages: &[u8]) -> impl Iterator<Item = (bool, usize, usize)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let here = pages.get(i)? & 1;
        let run = pages[i..].iter().take_while(|r| *r & 1 == here).count();
        i += run;
        Some((here == 1, i - run, run))
    })
}

/// Gives `[from, to)` (page-aligned guest RAM) back to the host; false if the host refused.
///
/// # Safety
/// `[from, to)` must be page-aligned guest RAM that the guest asked to zero.
unsafe fn drop_pages(from: usize, to: usize) -> bool {
    // SAFETY: advice on whole pages of our own guest RAM mapping (the caller's promise).
    unsafe { libc::madvise(from as *mut libc::c_void, to - from, libc::MADV_DONTNEED) == 0 }
}

/// # Safety
/// `[from, to)` must lie inside guest RAM.
unsafe fn memset(from: usize, to: usize) {
    // SAFETY: the caller's promise.
    unsafe { std::ptr::write_bytes(from as *mut u8, 0, to - from) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resident_pages(p: *mut u8, len: usize) -> usize {
        let mut v = vec![0u8; len / PAGE];
        // SAFETY: the mapping is `len` bytes.
        assert_eq!(unsafe { libc::mincore(p as *mut libc::c_void, len, v.as_mut_ptr()) }, 0);
        v.iter().filter(|r| *r & 1 == 1).count()
    }

    /// `len` bytes of guest RAM with 4 KiB host pages (so residency is exact), from a 2 MiB
    /// boundary on: the mapping (kept while the pointer is used) and the pointer.
    fn aligned_ram(len: usize) -> (super::super::memory::GuestRam, *mut u8) {
        let ram = super::super::memory::GuestRam::map(len as u64 + HUGE_PAGE as u64, false).unwrap();
        let base = ram.host_ptr(0, len as u64 + HUGE_PAGE as u64).unwrap();
        (ram, (base as usize).next_multiple_of(HUGE_PAGE) as *mut u8)
    }

    #[test]
    fn keeping_clears_resident_pages_in_place_up_to_the_budget_and_gives_back_the_rest() {
        let len = 2 * HUGE_PAGE;
        let (_ram, p) = aligned_ram(len);
        // SAFETY: all offsets below lie inside the mapping.
        unsafe {
            let written = [0, 3 * PAGE + 1, 7 * PAGE, HUGE_PAGE + 2 * PAGE, HUGE_PAGE + 40 * PAGE + 9];
            for off in written {
                *p.add(off) = 0xaa;
            }
            *p.add(len - 1) = 0x77;
            assert_eq!(resident_pages(p, len), 6);
            // Everything but the last byte, with room for four pages: the partial last page is
            // cleared (and counted) whatever the budget, the first three resident pages are
            // cleared where they are, and the other two are given back.
            let cleared = zero_keeping(p, len - 1, 4 * PAGE);
            assert_eq!(cleared, 3 * PAGE + PAGE - 1);
            assert_eq!(resident_pages(p, len), 4, "three kept, the last page holds a byte outside");
            for off in written {
                assert_eq!(*p.add(off), 0, "offset {off:#x}");
            }
            assert_eq!(*p.add(len - 1), 0x77, "the byte outside the range");
            // No budget: everything whole is given back.
            *p.add(5 * PAGE) = 1;
            assert_eq!(zero_keeping(p, HUGE_PAGE, 0), 0);
            assert_eq!(resident_pages(p, HUGE_PAGE), 0);
            assert_eq!(*p.add(5 * PAGE), 0);
        }
    }

    #[test]
    fn written_bytes_read_zero_and_untouched_pages_stay_unallocated() {
        let len = 3 * HUGE_PAGE;
        let (_ram, p) = aligned_ram(len);
        // SAFETY: all offsets below lie inside the mapping.
        unsafe {
            for off in [100, PAGE + 7, HUGE_PAGE + 5 * PAGE, 2 * HUGE_PAGE + 9 * PAGE + 1] {
                *p.add(off) = 0xaa;
            }
            *p.add(49) = 0x55;
            *p.add(2 * HUGE_PAGE + 9 * PAGE + 10) = 0x66;
            assert_eq!(resident_pages(p, len), 4);
            // From inside the first page to inside the last huge page's tenth page.
            zero(p.add(50), 2 * HUGE_PAGE + 9 * PAGE + 10 - 50);
            // The first and last pages hold bytes outside the range and the second was
            // resident: cleared, so still resident. The whole huge page in the middle had one
            // page resident: cleared in place too (`CLEAR_IN_PLACE_MAX`). Nothing untouched
            // was allocated.
            assert_eq!(resident_pages(p, len), 4);
            // (Reading a dropped page maps the host's zero page: checked after counting.)
            for off in [100, PAGE + 7, HUGE_PAGE + 5 * PAGE, 2 * HUGE_PAGE + 9 * PAGE + 1] {
                assert_eq!(*p.add(off), 0, "offset {off:#x}");
            }
            assert_eq!((*p.add(49), *p.add(2 * HUGE_PAGE + 9 * PAGE + 10)), (0x55, 0x66), "bytes outside the range");
        }
    }

    /// A whole 2 MiB page with a few resident 4 KiB pages keeps them, cleared (no translation
    /// the guest holds is dropped); one with many is given back; both read zero.
    #[test]
    fn few_touched_pages_of_a_huge_page_are_cleared_in_place() {
        let len = 2 * HUGE_PAGE;
        let (_ram, p) = aligned_ram(len);
        // SAFETY: all offsets below lie inside the mapping.
        unsafe {
            for page in [0, 7, 511] {
                *p.add(page * PAGE + 5) = 0xaa;
            }
            std::ptr::write_bytes(p.add(HUGE_PAGE), 0xbb, (CLEAR_IN_PLACE_MAX + 1) * PAGE);
            assert_eq!(resident_pages(p, len), 3 + CLEAR_IN_PLACE_MAX + 1);
            zero(p, len);
            assert_eq!(resident_pages(p, HUGE_PAGE), 3, "the few pages stay, cleared");
            assert_eq!(resident_pages(p.add(HUGE_PAGE), HUGE_PAGE), 0, "the many are given back");
            for page in [0, 7, 511] {
                assert_eq!(*p.add(page * PAGE + 5), 0, "page {page}");
            }
            assert!((0..(CLEAR_IN_PLACE_MAX + 1) * PAGE).step_by(61).all(|o| *p.add(HUGE_PAGE + o) == 0));
        }
    }

    #[test]
    fn dropping_gives_back_every_whole_page_and_clears_the_ends() {
        let len = 2 * HUGE_PAGE;
        let ram = super::super::memory::GuestRam::map(len as u64, false).unwrap();
        let p = ram.host_ptr(0, len as u64).unwrap();
        // SAFETY: all offsets below lie inside the mapping.
        unsafe {
            std::ptr::write_bytes(p, 0xaa, 8 * PAGE);
            assert_eq!(resident_pages(p, len), 8);
            // From inside the first page to inside the seventh.
            zero_dropping(p.add(100), 6 * PAGE + 50 - 100);
            // The first and seventh hold bytes outside the range: cleared in place; the five
            // between went back; the eighth was not in the range.
            assert_eq!(resident_pages(p, len), 3);
            for off in (100..6 * PAGE + 50).step_by(97) {
                assert_eq!(*p.add(off), 0, "offset {off:#x}");
            }
            assert_eq!((*p.add(99), *p.add(6 * PAGE + 50), *p.add(7 * PAGE)), (0xaa, 0xaa, 0xaa), "outside");
        }
    }
}
