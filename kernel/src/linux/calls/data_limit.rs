//! RLIMIT_DATA as Linux (4.7 and later) enforces it. The break may not grow the heap, with the
//! program's data segment, past the soft limit (Linux's `check_data_rlimit`: the break is
//! refused, and stays where it was). A private writable mapping (`mmap`, `mprotect` adding
//! PROT_WRITE, `mremap` growing one) may not take the program's data memory (its private
//! writable mappings, the heap among them, the main stack not) past it either: ENOMEM, unless
//! the soft limit is 0 and the hard one allows it (Linux's exception for Valgrind,
//! `may_expand_vm`). Without a limit (the usual case) nothing here is computed. (It was not
//! enforced at all: a program that set RLIMIT_DATA to 0 and called `malloc` until it failed,
//! as musl's libc-test does, grew the heap until the host ran out of memory.)

use core::sync::atomic::{AtomicU64, Ordering};

use hrt_abi::channel::maps_kind;

use crate::linux::errno::ENOMEM;
use crate::linux::process::PROCESS;
use crate::linux::protect::PROT_WRITE;

const RLIMIT_DATA: usize = 2;

/// The program's data segment as Linux measures it (`end_data - start_data`): from the start of
/// its highest loadable segment to the highest end of a segment's file bytes.
static DATA_SEGMENT: AtomicU64 = AtomicU64::new(0);

/// The loader's note of the program's loadable segments (`(vaddr, filesz)`, link addresses).
pub fn program_loaded(segments: impl Iterator<Item = (u64, u64)>) {
    let (mut start, mut end) = (0u64, 0u64);
    for (vaddr, filesz) in segments {
        start = start.max(vaddr);
        end = end.max(vaddr.saturating_add(filesz));
    }
    DATA_SEGMENT.store(end.saturating_sub(start), Ordering::Relaxed);
}

fn limits() -> (u64, u64) {
    PROCESS.rlimits.lock()[RLIMIT_DATA]
}

/// Whether the break may be set to `new` (the heap starting at `start`).
pub fn break_allowed(start: u64, new: u64) -> bool {
    let (soft, _) = limits();
    soft == u64::MAX || new.saturating_sub(start).saturating_add(DATA_SEGMENT.load(Ordering::Relaxed)) <= soft
}

/// Whether `adds` more bytes of private writable memory fit the limit (ENOMEM if not).
pub fn data_may_grow(adds: u64) -> Result<(), u32> {
    if limits().0 == u64::MAX || adds == 0 {
        return Ok(());
    }
    data_may_grow_from(data_bytes(), adds)
}

/// `data_may_grow` with the data memory measured before (`data_now`: the break's growth, whose
/// lock the measure takes).
pub fn data_may_grow_from(data: u64, adds: u64) -> Result<(), u32> {
    let (soft, hard) = limits();
    let total = data.saturating_add(adds);
    if soft == u64::MAX || adds == 0 || total <= soft || (soft == 0 && total <= hard) {
        return Ok(());
    }
    Err(ENOMEM)
}

/// The program's data memory now, if the limit is set (None: nothing to measure).
pub fn data_now() -> Option<u64> {
    limited().then(data_bytes)
}

/// Whether the limit is set (only then are mappings measured).
pub fn limited() -> bool {
    limits().0 != u64::MAX
}

/// What counts as data: private, writable, not the main stack.
fn is_data(prot: u32, kind: u32) -> bool {
    prot as u64 & PROT_WRITE != 0 && kind != maps_kind::SHARED && kind != maps_kind::STACK
}

/// The program's data memory in bytes.
fn data_bytes() -> u64 {
    crate::linux::maps::entries().iter().filter(|e| is_data(e.prot, e.kind)).map(|e| e.end - e.start).sum()
}

/// The bytes of `[start, end)` that PROT_WRITE would turn into data memory: mapped, private,
/// not the main stack, not writable now.
pub fn becoming_data(start: u64, end: u64) -> u64 {
    crate::linux::maps::entries()
        .iter()
        .filter(|e| e.prot as u64 & PROT_WRITE == 0 && e.kind != maps_kind::SHARED && e.kind != maps_kind::STACK)
        .map(|e| e.end.min(end).saturating_sub(e.start.max(start)))
        .sum()
}

/// Whether the mapping at `addr` is data memory (for `mremap`, which grows it).
pub fn is_data_at(addr: u64) -> bool {
    crate::linux::maps::entries().iter().any(|e| (e.start..e.end).contains(&addr) && is_data(e.prot, e.kind))
}
