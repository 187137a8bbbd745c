//! Mappings that grow down (`MAP_GROWSDOWN`): a touch of the unmapped memory below one extends
//! it down to the touched page, as Linux's page fault does for a `VM_GROWSDOWN` area (old
//! threading libraries and some language runtimes map their stacks so). Linux's limits hold:
//! the mapping may not grow past RLIMIT_STACK, nor within `GUARD_GAP` of an accessible mapping
//! below it, nor over anything mapped; otherwise the touch is the SIGSEGV it was.
//!
//! The records go with the memory: unmapped or replaced (`release`, from usermem's cut), they
//! are forgotten; mremap does not carry them (the moved mapping no longer grows). The main
//! stack is not one of them: it is reserved whole at load (loader.rs).
//!
//! Growth happens on a fault of the program's own access; a system call given a buffer below
//! such a mapping answers EFAULT, where Linux would grow the mapping.

use crate::linux::range_map::{RangeMap, Value};
use crate::linux::usermem::{self, PAGE};
use crate::sync::IrqSpinLock;

#[derive(Clone, Copy)]
struct GrowsDown;

impl Value for GrowsDown {}

static RANGES: IrqSpinLock<RangeMap<GrowsDown>> = IrqSpinLock::new(RangeMap::new());

/// Linux's default `stack_guard_gap`: 256 pages.
const GUARD_GAP: u64 = 256 * PAGE;
/// Linux's default `mmap_min_addr`: no mapping grows below it.
const MIN_ADDR: u64 = 64 << 10;

/// `[start, end)` is a new mapping made with MAP_GROWSDOWN.
pub fn mapped(start: u64, end: u64) {
    RANGES.lock().insert(start, end, GrowsDown);
}

/// `[start, end)` is being unmapped or replaced: no longer grows.
pub fn release(start: u64, end: u64) {
    let mut map = RANGES.lock();
    if !map.is_empty() {
        map.take(start, end);
    }
}

/// Where the growing mapping that contains `addr` starts, if one does (mprotect's
/// PROT_GROWSDOWN reaches down to there).
pub fn start_of(addr: u64) -> Option<u64> {
    RANGES.lock().iter().find(|&(s, e, _)| s <= addr && addr < e).map(|(s, _, _)| s)
}

/// A fault at `addr`, which no mapping holds: true if a mapping that grows down lies right
/// above it and may grow down to its page (it then has), so that the access is retried.
pub fn fault(addr: u64) -> bool {
    let page = addr & !(PAGE - 1);
    let above = {
        let map = RANGES.lock();
        if map.is_empty() {
            return false;
        }
        let found = map.iter().find(|&(s, _, _)| s > addr).map(|(s, e, _)| (s, e));
        found
    };
    let Some((start, end)) = above else { return false };
    // Linux looks at the first mapping above the address: it must be this one.
    if page < MIN_ADDR || !usermem::mapped_parts(page, start).0.is_empty() {
        return false;
    }
    let limit = crate::linux::process::PROCESS.rlimits.lock()[3].0;
    if end - page > limit {
        return false;
    }
    // An accessible mapping below that does not grow itself must stay GUARD_GAP away.
    let below = usermem::program_parts(page.saturating_sub(GUARD_GAP), page).0.last().copied();
    if let Some((_, prev_end)) = below {
        let grows = !RANGES.lock().overlapping(prev_end - PAGE, prev_end).is_empty();
        if !grows && crate::linux::protect::prot_at(prev_end - PAGE).is_some() {
            return false;
        }
    }
    let Some(prot) = crate::linux::protect::prot_at(start) else { return false };
    if !usermem::grow_down(page, start) {
        // Another thread grew it meanwhile: the access is retried; else it stays a fault.
        return usermem::is_mapped(page, page + PAGE);
    }
    crate::linux::protect::set(page, start, prot);
    let mut map = RANGES.lock();
    map.take(start, end);
    map.insert(page, end, GrowsDown);
    true
}
