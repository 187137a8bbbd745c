//! A wait queue: threads block on it until a condition holds; wakers wake one or all.

use core::sync::atomic::Ordering;

use super::runqueue::RunQueue;
use super::thread::BLOCKING;
use crate::sync::IrqSpinLock;

pub struct WaitQueue {
    waiters: IrqSpinLock<RunQueue>,
}

impl Default for WaitQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl WaitQueue {
    pub const fn new() -> Self {
        WaitQueue { waiters: IrqSpinLock::new(RunQueue::new()) }
    }

    /// Enqueues the current thread as BLOCKING; the caller then releases whatever protects
    /// its condition and calls `sched::block()`.
    pub fn prepare_to_wait(&self) {
        let cur = super::current();
        let mut q = self.waiters.lock();
        // SAFETY: the current thread is alive and in no other queue while running.
        unsafe { (*cur).state.store(BLOCKING, Ordering::SeqCst) };
        // SAFETY: the running thread is live and in no queue.
        unsafe { q.push(cur) };
    }

    /// Blocks until `cond()` is true. `cond` is re-checked after enqueueing, so a wake-up
    /// between the check and the block is never lost.
    pub fn wait_until(&self, cond: impl Fn() -> bool) {
        while !cond() {
            self.prepare_to_wait();
            if cond() {
                self.cancel_wait();
                return;
            }
            super::block();
        }
    }

    /// Undoes `prepare_to_wait` when the condition turned true before blocking.
    pub fn cancel_wait(&self) {
        let cur = super::current();
        let removed = self.waiters.lock().remove(cur);
        if removed {
            // SAFETY: the current thread's record is alive.
            unsafe { (*cur).state.store(super::thread::RUNNING, Ordering::SeqCst) };
        } else {
            // A waker already dequeued us and marked us ready; consume that wake-up.
            super::block();
        }
    }

    /// Wakes the longest waiter; returns whether there was one.
    pub fn wake_one(&self) -> bool {
        let t = self.waiters.lock().pop();
        match t {
            Some(t) => {
                // SAFETY: a waiting thread's record is alive until it is woken.
                unsafe { super::wake(t) };
                true
            }
            None => false,
        }
    }

    /// Wakes every waiter; returns how many.
    pub fn wake_all(&self) -> usize {
        let mut n = 0;
        while self.wake_one() {
            n += 1;
        }
        n
    }

    pub fn has_waiters(&self) -> bool {
        !self.waiters.lock().is_empty()
    }
}
