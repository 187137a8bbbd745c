//! getrusage's ru_maxrss for the program itself: the host's figure (`op::MAX_RSS`, a call to
//! the monitor), kept for `FRESH_NS` of wall time.
//!
//! Programs that time themselves with getrusage call it around every short loop (HPCCG: 1,500
//! calls in a 0.1 s run), and the monitor's answer costs a VM exit wherever no service thread
//! polls the channel (~70 us on a PVM host at `--cpus` equal to the host's CPUs, 200x the
//! whole call natively). The figure only grows, and only as fast as the host can fault in
//! and clear pages (a few GB/s), so an answer at most 1 ms old misses at most a few MiB of
//! the very last touches; Linux's own resident-set counters lag by their per-CPU batches too.

use core::sync::atomic::{AtomicU64, Ordering};

use hrt_abi::process as op;

/// How long an answer of the monitor stands, in nanoseconds.
const FRESH_NS: u64 = 1_000_000;

/// The last answer in KiB, and the kernel time it was asked at (0: never).
static KIB: AtomicU64 = AtomicU64::new(0);
static ASKED_AT: AtomicU64 = AtomicU64::new(0);

/// The program's largest resident set in KiB (0 when the monitor cannot tell).
pub fn of_program() -> i64 {
    let now = crate::time::now_ns().max(1);
    let at = ASKED_AT.load(Ordering::Acquire);
    if at != 0 && now.saturating_sub(at) < FRESH_NS {
        return KIB.load(Ordering::Relaxed) as i64;
    }
    let kib = super::procs::call(op::MAX_RSS, [0; 6]).unwrap_or(0);
    // A peak never falls: keep the largest of concurrent answers.
    let kib = KIB.fetch_max(kib, Ordering::Relaxed).max(kib);
    // The time asked, not answered: the answer is at least as new as that.
    ASKED_AT.store(now, Ordering::Release);
    kib as i64
}

/// A forked child's peak is its own `hrt`'s: ask again.
pub fn after_fork() {
    KIB.store(0, Ordering::Relaxed);
    ASKED_AT.store(0, Ordering::Release);
}
