//! Condition variable over a `SpinLock`. A signal wakes a waiter; if the waiter's CPU is
//! halted in its idle loop, the wake-up kicks it with an IPI (see `sched::make_runnable`).

use super::WaitQueue;
use crate::sync::spinlock::SpinGuard;

#[derive(Default)]
pub struct CondVar {
    waiters: WaitQueue,
}

impl CondVar {
    pub const fn new() -> Self {
        CondVar { waiters: WaitQueue::new() }
    }

    /// Atomically releases `guard`'s lock and waits for a signal, then re-takes the lock.
    /// As with every condition variable, callers re-check their condition in a loop.
    pub fn wait<'a, T>(&self, guard: SpinGuard<'a, T>) -> SpinGuard<'a, T> {
        self.waiters.prepare_to_wait();
        let lock = guard.unlock();
        super::block();
        lock.lock()
    }

    pub fn signal(&self) -> bool {
        self.waiters.wake_one()
    }

    pub fn broadcast(&self) -> usize {
        self.waiters.wake_all()
    }
}
