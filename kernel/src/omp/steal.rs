//! Nonmonotonic dynamic loops by work stealing. Since OpenMP 5.0 `schedule(dynamic[,c])`
//! without a modifier is *nonmonotonic* (OpenMP 5.1, 2.11.4: chunks may be handed to a thread
//! in any order), which gcc 12 says by calling GOMP_loop_nonmonotonic_dynamic_* (and
//! GOMP_loop_maybe_nonmonotonic_runtime_* / GOMP_loop_start with schedule 2, 0 or 4). A shared
//! counter hands chunks out in increasing order, but its cache line then moves between the
//! CPUs at every chunk. Here each thread of the team owns a contiguous range of chunk indices
//! on a cache line of its own (a `Lane`) and takes chunks from its front with one uncontended
//! `lock xadd`; a thread whose range is empty steals the back half of another thread's
//! remaining range with a compare-and-swap. No lock: a descheduled owner never blocks a thief
//! (its range is one word that thieves change without it), and a descheduled thief holds only
//! the chunks it took.
//!
//! A range is one word, `lo | hi << 32` (chunk indices, `lo < hi` while it holds chunks): the
//! owner adds 1 (lo moves up; when it was empty lo passes hi, still empty), a thief replaces
//! `(lo, hi)` by `(lo, m)` and puts `(m + 1, hi)` in its own lane after running chunk m
//! itself. Every chunk index is in at most one lane, and leaves it exactly once, through a
//! read-modify-write of that one word, so every chunk runs exactly once. A word never comes
//! back to a value it had (a range's first chunk is consumed before its lane empties, and a
//! stolen range's first chunk is run by the thief, never put in a lane), so the CAS has no
//! ABA case.
//!
//! The loop's final chunk is in no lane: gcc's `lastprivate` (and `linear`) copy-out runs in
//! the thread whose *last* chunk ended at the loop's end (it tests its private loop variable
//! after GOMP_loop_*_next returned false), so the thread that runs the final chunk must get no
//! chunk after it. It goes to the first thread that finds every lane empty, which then stops
//! (its lane says `FINISHED`); lanes only shrink, so there is no later chunk it could miss.
//!
//! Loops with more chunks than fit (`MAX_CHUNKS`), ordered, doacross and `monotonic:` loops
//! and teams of one keep the shared counter (`work::dynamic_range` and `work::next`).

use core::sync::atomic::{AtomicU64, Ordering};

use super::work::WorkShare;

/// Chunks a stealing loop may have: ranges stay below 2^31, so an owner's `lo` never carries
/// into `hi`, and `FINISHED` plus any number of later increments stays empty.
pub const MAX_CHUNKS: u64 = 1 << 30;

/// The lane of a thread that has finished the loop: `lo` 2^31 above `hi` 0, empty for thieves
/// and for the owner's increments.
const FINISHED: u64 = 1 << 31;

const LOW: u64 = 0xffff_ffff;

fn pack(lo: u64, hi: u64) -> u64 {
    lo | hi << 32
}

/// One thread's chunks of a stealing loop, on cache lines of its own (128 bytes: the adjacent
/// line prefetcher pulls lines in pairs).
#[repr(align(128))]
pub struct Lane {
    range: AtomicU64,
    /// The work share whose lanes these are (fixed when the lane is made).
    share: *const WorkShare,
    /// This lane's place among them.
    index: usize,
}

impl Lane {
    pub fn new(share: *const WorkShare, index: usize) -> Lane {
        Lane { range: AtomicU64::new(FINISHED), share, index }
    }

    /// The work share this lane belongs to.
    #[inline(always)]
    pub fn share(&self) -> &WorkShare {
        // SAFETY: a team's work shares live as long as the team, which is never freed, and the
        // lanes are theirs.
        unsafe { &*self.share }
    }

    /// The owner's next chunk from the front of its own range (the inline part of
    /// `work::next`): Some(chunk index), or None when the range was empty (then `refill`).
    #[inline(always)]
    pub fn take(&self) -> Option<u64> {
        let old = self.range.fetch_add(1, Ordering::Relaxed);
        let lo = old & LOW;
        (lo < old >> 32).then_some(lo)
    }
}

/// Deals chunks `0..nchunks - 1` (all but the final one) to `lanes` in contiguous ranges of
/// equal size (within one): thread t's range comes before thread t + 1's.
pub fn deal(lanes: &[Lane], nchunks: u64) {
    let dealt = nchunks - 1;
    let nth = lanes.len() as u64;
    for (t, lane) in lanes.iter().enumerate() {
        let t = t as u64;
        lane.range.store(pack(dealt * t / nth, dealt * (t + 1) / nth), Ordering::Relaxed);
    }
}

/// The owner's chunk when its own range is empty: the first chunk of half of another lane's
/// remaining range (the rest goes into this lane), else the loop's final chunk if no thread
/// took it yet, else None (and this lane says `FINISHED` from now on).
pub fn refill(lane: &Lane, lanes: &[Lane], nchunks: u64, final_taken: &AtomicU64) -> Option<u64> {
    if lane.range.load(Ordering::Relaxed) & LOW >= FINISHED {
        return None;
    }
    let n = lanes.len();
    for k in 1..n {
        let victim = &lanes[(lane.index + k) % n];
        let mut cur = victim.range.load(Ordering::Relaxed);
        loop {
            let (lo, hi) = (cur & LOW, cur >> 32);
            if lo >= hi {
                break;
            }
            // The back half, rounded up: a range of one chunk is taken whole.
            let m = hi - (hi - lo).div_ceil(2);
            match victim.range.compare_exchange_weak(cur, pack(lo, m), Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => {
                    // Only this thread makes its own lane non-empty, and it is empty now.
                    lane.range.store(pack(m + 1, hi), Ordering::Relaxed);
                    return Some(m);
                }
                Err(now) => cur = now,
            }
        }
    }
    // Every lane was empty when looked at, and lanes never grow but by the refill of their
    // own (empty) lane: no chunk is left to deal but those thieves are just moving.
    lane.range.store(FINISHED, Ordering::Relaxed);
    (final_taken.swap(1, Ordering::Relaxed) == 0).then_some(nchunks - 1)
}
