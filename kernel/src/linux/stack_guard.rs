//! Where the main stack's guard lies: HRT keeps it as PROT_NONE memory right below the stack
//! (see loader.rs), but to Linux it is a gap with nothing mapped (stack_guard_gap), so a fault
//! there (a runaway recursion) is SEGV_MAPERR, where a fault in a PROT_NONE mapping is
//! SEGV_ACCERR. A thread's guard is a PROT_NONE mapping on Linux too (glibc maps it) and is
//! not recorded here.

use core::sync::atomic::{AtomicU64, Ordering};

/// `[LOW, HIGH)`: the current program's main-stack guard (empty before the first load).
static LOW: AtomicU64 = AtomicU64::new(0);
static HIGH: AtomicU64 = AtomicU64::new(0);

/// Records the guard of the stack just loaded (at start-up and at each execve).
pub fn set(low: u64, high: u64) {
    LOW.store(low, Ordering::Relaxed);
    HIGH.store(high, Ordering::Relaxed);
}

/// Whether `addr` lies in the main stack's guard. (A program that maps something there itself
/// with MAP_FIXED still counts as faulting in the gap: an edge HRT does not follow.)
pub fn contains(addr: u64) -> bool {
    (LOW.load(Ordering::Relaxed)..HIGH.load(Ordering::Relaxed)).contains(&addr)
}
