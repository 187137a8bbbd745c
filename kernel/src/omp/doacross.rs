//! Doacross loops (`ordered(n)` with `depend(sink: ...)` and `depend(source)`): gcc shares out
//! the outermost of the n loops as a loop over 0..counts[0] and passes iteration vectors in
//! logical numbers (0-based in each loop). The thread that runs an outer iteration runs its
//! inner iterations in order, so one counter per outer iteration says how far it got: the
//! flattened inner number of its last `source`, plus one. A `sink` waits for that counter.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use super::wait::{self, Word};

/// Outer iterations above this would take more than 1 GiB of counters.
const MAX_OUTER: u64 = 1 << 27;

pub struct Doacross {
    /// Iterations of every loop of the nest, outermost first.
    counts: Vec<u64>,
    /// Per outer iteration: the flattened inner number of its last `source`, plus one.
    done: Box<[AtomicU64]>,
    /// Sleepers wait on it; a `source` nudges it.
    moved: Word,
}

impl Doacross {
    pub fn new(counts: &[u64]) -> Doacross {
        // A nest with an empty loop has no iteration to post or wait for, and gcc leaves the
        // counts after the empty one unset: none is read.
        let counts = match counts.iter().position(|&n| n == 0) {
            Some(_) => &[0][..],
            None => counts,
        };
        // The inner iterations are numbered in a u64 (`inner`).
        let inner = counts.iter().skip(1).try_fold(1u64, |p, &n| p.checked_mul(n));
        if counts.is_empty() || inner.is_none_or(|p| p == u64::MAX) {
            super::team::fatal("a doacross loop nest of more than 2^64 inner iterations is not supported");
        }
        if counts[0] > MAX_OUTER {
            super::team::fatal("a doacross loop of more than 2^27 outer iterations is not supported");
        }
        let done = (0..counts[0]).map(|_| AtomicU64::new(0)).collect();
        Doacross { counts: counts.to_vec(), done, moved: Word::new(0) }
    }

    /// The inner part of iteration vector `v` (`v(i)`: its number in loop i) as one number
    /// (None when outside the nest).
    fn inner(&self, v: &impl Fn(usize) -> u64) -> Option<u64> {
        let mut flat = 0u64;
        for (i, n) in self.counts.iter().enumerate().skip(1) {
            let x = v(i);
            if x >= *n {
                return None;
            }
            flat = flat * n + x;
        }
        Some(flat)
    }

    /// `depend(source)` of iteration `v` (`v(i)`: its number in loop i, for each loop).
    pub fn post(&self, v: impl Fn(usize) -> u64) {
        let (Some(done), Some(flat)) = (self.done.get(v(0) as usize), self.inner(&v)) else { return };
        // SeqCst, as the sleepers count `nudge` reads: a Release store could still sit in this
        // CPU's store buffer when that load runs, while a waiter that registered meanwhile reads
        // the old count and sleeps with no wake-up coming (a passive doacross loop hung).
        done.store(flat + 1, Ordering::SeqCst);
        self.moved.nudge();
    }

    /// `depend(sink: v)`: waits until iteration `v` has run its `source` (at once when `v` is
    /// outside the iteration space, as the specification says).
    pub fn wait(&self, v: impl Fn(usize) -> u64) {
        let (Some(done), Some(flat)) = (self.done.get(v(0) as usize), self.inner(&v)) else { return };
        wait::until(&self.moved, || done.load(Ordering::Acquire) > flat);
    }
}
