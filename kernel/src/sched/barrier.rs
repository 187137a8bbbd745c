//! A reusable barrier for a fixed number of threads. Waiters spin first (the HPC default:
//! threads own their CPUs), yielding to other ready threads on their CPU so that more threads
//! than CPUs cannot deadlock it, and block after `SPIN_NS`, so a round that waits for a vCPU
//! the host has descheduled does not burn the host CPU it needs.

use core::sync::atomic::{AtomicUsize, Ordering};

use super::WaitQueue;

/// How long a waiter spins before it blocks.
const SPIN_NS: u64 = 50_000;

pub struct Barrier {
    parties: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
    /// Waiters that stopped spinning; the last arrival wakes them.
    sleepers: WaitQueue,
    sleeping: AtomicUsize,
}

impl Barrier {
    pub const fn new(parties: usize) -> Self {
        Barrier {
            parties,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            sleepers: WaitQueue::new(),
            sleeping: AtomicUsize::new(0),
        }
    }

    /// Waits until all parties have arrived. Returns true in exactly one of them per round.
    pub fn wait(&self) -> bool {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::SeqCst);
            if self.sleeping.load(Ordering::SeqCst) != 0 {
                self.sleepers.wake_all();
            }
            return true;
        }
        let passed = || self.generation.load(Ordering::SeqCst) != generation;
        let give_up = crate::time::ticks() + crate::time::ns_to_ticks(SPIN_NS);
        while !passed() {
            if crate::time::ticks() >= give_up {
                self.sleeping.fetch_add(1, Ordering::SeqCst);
                self.sleepers.wait_until(passed);
                self.sleeping.fetch_sub(1, Ordering::SeqCst);
                break;
            }
            core::hint::spin_loop();
            super::yield_now();
        }
        false
    }

    pub fn parties(&self) -> usize {
        self.parties
    }
}
