//! Synchronisation: spinlocks, wait queues, condition variables (with IPI kick), barriers.
pub mod barrier;
pub mod condvar;
pub mod spinlock;
pub mod waitqueue;

pub use barrier::Barrier;
pub use condvar::CondVar;
pub use spinlock::{IrqSpinLock, SpinLock};
pub use waitqueue::WaitQueue;

use core::cell::UnsafeCell;

/// A cell owned by one CPU. The owner accesses it with interrupts disabled (or from code that
/// interrupts on that CPU never touch), so no lock is needed.
pub struct PerCpuCell<T>(UnsafeCell<T>);

// SAFETY: by contract only the owning CPU accesses the value.
unsafe impl<T> Sync for PerCpuCell<T> {}

impl<T> PerCpuCell<T> {
    pub const fn new(value: T) -> Self {
        PerCpuCell(UnsafeCell::new(value))
    }

    pub fn get(&self) -> *mut T {
        self.0.get()
    }
}
