//! A reusable barrier for a fixed number of threads. Waiters spin first (the HPC default:
//! threads own their CPUs), yielding to other ready threads on their CPU so that more threads
//! than CPUs cannot deadlock it, and block after `SPIN_NS`, so a round that waits for a vCPU
//! the host has descheduled does not burn the host CPU it needs. When the vCPUs outnumber the
//! host's CPUs, a waiter that has spun `HOST_YIELD_AFTER_NS` gives its host CPU away at each
//! further round of its spin (a host `sched_yield` through the monitor), as the awaited vCPU
//! may be waiting for exactly that CPU: `hrt selftest --cpus 4 --filter barrier` on 2 host
//! CPUs (load ~5.7) took 4.6-6.7 s spinning, 1.6-4.0 s blocking after 2 us, 0.6-1.1 s so.

use core::sync::atomic::{AtomicUsize, Ordering};

use super::WaitQueue;

/// How long a waiter spins before it blocks.
const SPIN_NS: u64 = 50_000;
/// When the vCPUs outnumber the host's CPUs: how long a waiter spins before it starts giving
/// its host CPU away.
const HOST_YIELD_AFTER_NS: u64 = 2_000;

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
        let yield_from = crate::time::ticks() + crate::time::ns_to_ticks(HOST_YIELD_AFTER_NS);
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
            if super::host_overcommitted() && crate::time::ticks() >= yield_from {
                crate::arch::hypercall::host_yield();
            }
        }
        false
    }

    pub fn parties(&self) -> usize {
        self.parties
    }
}
