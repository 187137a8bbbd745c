//! The 2 MiB pages of the pool that the host backs with 4 KiB pages because a thread stack's
//! top was there (`nr::SMALL_HOST_PAGES`, `usermem::alloc_stack`), and that keep those small
//! pages while nothing else needs the whole 2 MiB: the next stack whose top lands on one needs
//! no monitor operation. With every vCPU on a host CPU of its own (`--cpus` equal to the host's
//! CPUs, the default) the service threads have no CPU to spare, so each such operation was a
//! VM exit (~60-70 us of a new thread's ~245 us). A mapping that takes a whole one for other
//! use makes it huge-page memory again first (`usermem`), so that a large array there costs
//! the host one fault per 2 MiB, not 512.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use crate::sync::IrqSpinLock;

static SMALL: IrqSpinLock<BTreeSet<u64>> = IrqSpinLock::new(BTreeSet::new());

const LARGE: u64 = 2 << 20;

/// Whether the 2 MiB page at `top` keeps small host pages.
pub fn contains(top: u64) -> bool {
    SMALL.lock().contains(&top)
}

/// The 2 MiB page at `top` was given small host pages.
pub fn insert(top: u64) {
    SMALL.lock().insert(top);
}

/// Whether one of them lies wholly inside `[start, end)`.
pub fn any_within(start: u64, end: u64) -> bool {
    SMALL.lock().range(start..end).any(|&p| p + LARGE <= end)
}

/// Whether one of them overlaps `[start, end)`.
pub fn any_overlapping(start: u64, end: u64) -> bool {
    SMALL.lock().range(start.saturating_sub(LARGE - 1)..end).next().is_some()
}

/// Takes out the ones wholly inside `[start, end)` and returns them.
pub fn take_within(start: u64, end: u64) -> Vec<u64> {
    let mut set = SMALL.lock();
    let taken: Vec<u64> = set.range(start..end).copied().filter(|&p| p + LARGE <= end).collect();
    for p in &taken {
        set.remove(p);
    }
    taken
}

/// All of them are huge-page memory again (an exec gave the old image's pages back).
pub fn clear() {
    SMALL.lock().clear();
}
