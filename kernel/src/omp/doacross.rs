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
/// gcc passes the vector of a `sink` as variadic arguments; this runtime reads this many.
pub const MAX_DIMS: usize = 16;

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
        if counts.is_empty() || counts.len() > MAX_DIMS {
            super::team::fatal("a doacross loop nest deeper than 16 loops is not supported");
        }
        if counts[0] > MAX_OUTER {
            super::team::fatal("a doacross loop of more than 2^27 outer iterations is not supported");
        }
        let done = (0..counts[0]).map(|_| AtomicU64::new(0)).collect();
        Doacross { counts: counts.to_vec(), done, moved: Word::new(0) }
    }

    /// The inner part of `v` as one number (None when outside the nest).
    fn inner(&self, v: &[u64]) -> Option<u64> {
        let mut flat = 0u64;
        for (x, n) in v.iter().zip(&self.counts).skip(1) {
            if x >= n {
                return None;
            }
            flat = flat.checked_mul(*n)?.checked_add(*x)?;
        }
        Some(flat)
    }

    /// `depend(source)` of iteration `v`.
    pub fn post(&self, v: &[u64]) {
        let (Some(done), Some(flat)) = (self.done.get(v[0] as usize), self.inner(v)) else { return };
        done.store(flat + 1, Ordering::Release);
        self.moved.nudge();
    }

    /// `depend(sink: v)`: waits until iteration `v` has run its `source` (at once when `v` is
    /// outside the iteration space, as the specification says).
    pub fn wait(&self, v: &[u64]) {
        let (Some(done), Some(flat)) = (self.done.get(v[0] as usize), self.inner(v)) else { return };
        wait::until(&self.moved, || done.load(Ordering::Acquire) > flat);
    }

    pub fn dims(&self) -> usize {
        self.counts.len()
    }
}
