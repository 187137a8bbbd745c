//! Which host page size backs the 2 MiB pages that mappings cover only in part.
//!
//! The host backs guest RAM with transparent huge pages: the first touch of a fresh 2 MiB page
//! costs the host all of it. A mapping that covers a whole 2 MiB page gets it so, as Linux
//! with THP "always" would give it a huge page; one that covers only part of one (a mapping
//! smaller than 2 MiB, a larger one's ends) would get 4 KiB pages from Linux. Packed small
//! mappings share their 2 MiB pages, but a program that maps many and touches each a little
//! made the host allocate 2 MiB per page all the same: 8,000 mappings of 256 KiB with one
//! byte written in each cost the host 2 GB against 32 MB natively, and 100,000 of 1 MiB drove
//! `hrt` into the host's OOM killer.
//!
//! So such a page keeps huge host pages only while fewer than [`HUGE_BUDGET`] of them do (at
//! most 512 MiB of host memory the program may not use): a program with a few hundred small
//! mappings pays one host fault per 2 MiB, as before. Past it, a 2 MiB page that a partial
//! mapping finds all free gets 4 KiB host pages (`nr::SMALL_HOST_PAGES`), so the host has what
//! the program touched, as natively; a first touch costs more there (~22 us per 4 KiB page
//! against one 2 MiB clear of 0.3-7 ms). The page joins `small_tops` and is made huge again
//! when a mapping takes all of it. The count goes down when such a page is all free again.
//! Not learned: a mapping that covers whole 2 MiB pages and touches one byte in each still
//! costs 2 MiB per page, as on Linux with THP "always".

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use crate::mem::page_runs::PageRuns;
use crate::sync::IrqSpinLock;

const LARGE: u64 = crate::arch::paging::LARGE_PAGE_SIZE;

/// How many 2 MiB pages that mappings cover only in part may keep huge host pages.
pub const HUGE_BUDGET: usize = 256;

/// The 2 MiB pages a partial mapping found all free and left with huge host pages.
static HUGE_PARTIAL: IrqSpinLock<BTreeSet<u64>> = IrqSpinLock::new(BTreeSet::new());

/// After the mapping `[at, end)` (or a mapping's growth in place) was taken from `free` (under
/// the memory lock): the 2 MiB pages it covers only in part and that were all free before it,
/// past the budget, which should get small host pages (at most two: its first and its last).
pub fn placed(free: &PageRuns, at: u64, end: u64) -> Vec<u64> {
    let mut small = Vec::new();
    let (first, last) = (at & !(LARGE - 1), (end - 1) & !(LARGE - 1));
    let pages = if first == last { &[first][..] } else { &[first, last][..] };
    for &page in pages {
        let whole = at <= page && end >= page + LARGE;
        let alone = free.is_free(page, at.max(page)) && free.is_free(end.min(page + LARGE), page + LARGE);
        if whole || !alone || super::small_tops::contains(page) {
            continue;
        }
        let mut huge = HUGE_PARTIAL.lock();
        if huge.len() < HUGE_BUDGET {
            huge.insert(page);
        } else if !huge.contains(&page) {
            small.push(page);
        }
    }
    small
}

/// After `[start, end)` went back to `free` (under the memory lock): the partial pages in it
/// that are all free again leave the budget's count.
pub fn freed(free: &PageRuns, start: u64, end: u64) {
    let mut huge = HUGE_PARTIAL.lock();
    if huge.is_empty() {
        return;
    }
    let gone: Vec<u64> =
        huge.range((start & !(LARGE - 1))..end).copied().filter(|&p| free.is_free(p, p + LARGE)).collect();
    for page in gone {
        huge.remove(&page);
    }
}
