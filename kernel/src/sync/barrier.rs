//! A reusable barrier for a fixed number of threads. Waiters spin (the HPC default: threads
//! own their CPUs) and yield to other ready threads on their CPU so that more threads than
//! CPUs cannot deadlock it.

use core::sync::atomic::{AtomicUsize, Ordering};

pub struct Barrier {
    parties: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl Barrier {
    pub const fn new(parties: usize) -> Self {
        Barrier { parties, arrived: AtomicUsize::new(0), generation: AtomicUsize::new(0) }
    }

    /// Waits until all parties have arrived. Returns true in exactly one of them per round.
    pub fn wait(&self) -> bool {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return true;
        }
        while self.generation.load(Ordering::Acquire) == generation {
            core::hint::spin_loop();
            crate::sched::yield_now();
        }
        false
    }

    pub fn parties(&self) -> usize {
        self.parties
    }
}
