//! Spinlocks: `SpinLock` for data never touched by interrupt handlers, `IrqSpinLock` for data
//! that is (it disables interrupts on this CPU while held and restores the previous state).

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicU32, Ordering};

use crate::arch::irq;

/// Plain `SpinLock`s held are counted per CPU (`PerCpu::spinlocks_held`): +1 where one is
/// taken, -1 where it is released, each one instruction on this CPU's record. Their holders
/// keep interrupts on, so they may be preempted inside the critical section and resume on
/// another CPU: only the sum over the CPUs means anything (`held_anywhere`).
///
/// Why: a fork copies memory while every other CPU waits at a safe point (`sched::freeze`),
/// but a thread preempted inside a critical section is on no CPU, and its lock stays held in
/// the copy, where the thread never runs again: the child spun for good on the first such lock
/// it took (`linux::symbols`' table, held by a thread of the parent that was preempted while
/// looking up a system-call site's function: 2 runs in ~120 of fork_sleepers at `--cpus 2
/// --idle halt` on a loaded host). `fork` waits until none is held (`linux::calls::fork`).
/// `IrqSpinLock`s are not counted: their holders mask interrupts, so nothing preempts them.
#[inline(always)]
fn note_held(delta: i64) {
    crate::arch::percpu::add_spinlocks_held(delta);
}

/// For a lock of its own kind (a flag taken with `swap`, held across a wait for other CPUs or
/// the host), held with interrupts on: counted as a held `SpinLock`, so that `fork` waits for
/// its holder as for one. Call `raw_lock_released` when it is released. Uncounted, a TLB
/// shootdown's request flag held by a thread preempted in it stayed held in a forked child,
/// whose first `mprotect` spun for good (nix's test_unistd, 3 runs in 25).
#[inline(always)]
pub fn raw_lock_taken() {
    note_held(1);
}

/// Releases what `raw_lock_taken` counted.
#[inline(always)]
pub fn raw_lock_released() {
    note_held(-1);
}

/// How many plain `SpinLock`s are held, by any thread. Exact while no other CPU can take or
/// release one (all of them frozen: `sched::freeze::freeze_others`).
pub fn held_anywhere() -> i64 {
    (0..crate::cpu::count()).map(|c| crate::cpu::get(c).spinlocks_held.load(Ordering::Relaxed)).sum()
}

/// A test-and-test-and-set spinlock. The word is 32 bits: on the test host's AMD CPU a locked
/// byte operation costs about twice a locked 32-bit one (a byte CMPXCHG and its releasing
/// store 10.8-16.0 cycles a pair in a loop, 32-bit 6.0-7.1), and kernel locks are taken often.
pub struct SpinLock<T: ?Sized> {
    locked: AtomicU32,
    data: UnsafeCell<T>,
}

// SAFETY: the lock serialises all access to `data`.
unsafe impl<T: ?Sized + Send> Sync for SpinLock<T> {}
// SAFETY: moving the lock moves the data; T: Send makes that fine.
unsafe impl<T: ?Sized + Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    pub const fn new(value: T) -> Self {
        SpinLock { locked: AtomicU32::new(0), data: UnsafeCell::new(value) }
    }
}

impl<T: ?Sized> SpinLock<T> {
    pub fn lock(&self) -> SpinGuard<'_, T> {
        self.acquire();
        note_held(1);
        SpinGuard { lock: self }
    }

    pub fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        if self.locked.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            note_held(1);
            Some(SpinGuard { lock: self })
        } else {
            None
        }
    }

    fn acquire(&self) {
        loop {
            if self.locked.compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return;
            }
            while self.locked.load(Ordering::Relaxed) != 0 {
                core::hint::spin_loop();
            }
        }
    }

    fn release(&self) {
        self.locked.store(0, Ordering::Release);
    }

    /// Access without locking, for the owner of `&mut self`.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// Access without locking, for data that only one thread uses for a while (an OpenMP
    /// team of one's task lanes).
    ///
    /// # Safety
    /// No other access to the data, locked or not, overlaps the returned reference's use.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn get_unlocked(&self) -> &mut T {
        // SAFETY: the caller's guarantee.
        unsafe { &mut *self.data.get() }
    }

    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed) != 0
    }
}

pub struct SpinGuard<'a, T: ?Sized> {
    lock: &'a SpinLock<T>,
}

impl<'a, T: ?Sized> SpinGuard<'a, T> {
    /// Releases the lock and returns it, so a waiter can take it again later.
    pub fn unlock(self) -> &'a SpinLock<T> {
        let lock = self.lock;
        drop(self);
        lock
    }
}

impl<T: ?Sized> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the lock is held, and `&mut self` makes this access unique.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.release();
        note_held(-1);
    }
}

/// A spinlock that also disables interrupts on the local CPU while held.
pub struct IrqSpinLock<T: ?Sized> {
    inner: SpinLock<T>,
}

impl<T> IrqSpinLock<T> {
    pub const fn new(value: T) -> Self {
        IrqSpinLock { inner: SpinLock::new(value) }
    }
}

impl<T: ?Sized> IrqSpinLock<T> {
    pub fn lock(&self) -> IrqSpinGuard<'_, T> {
        let were_enabled = irq::save_and_disable();
        self.inner.acquire();
        IrqSpinGuard { lock: &self.inner, were_enabled }
    }
}

pub struct IrqSpinGuard<'a, T: ?Sized> {
    lock: &'a SpinLock<T>,
    were_enabled: bool,
}

impl<'a, T: ?Sized> IrqSpinGuard<'a, T> {
    /// Releases the lock but leaves interrupts disabled; returns whether they were enabled
    /// before `lock()`. For callers that must drop the lock and switch threads atomically.
    pub fn unlock_keep_irqs_off(self) -> bool {
        let were = self.were_enabled;
        self.lock.release();
        core::mem::forget(self);
        were
    }
}

impl<T: ?Sized> Deref for IrqSpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard proves the lock is held.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T: ?Sized> DerefMut for IrqSpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard proves the lock is held, and `&mut self` makes this access unique.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T: ?Sized> Drop for IrqSpinGuard<'_, T> {
    fn drop(&mut self) {
        self.lock.release();
        irq::restore(self.were_enabled);
    }
}
