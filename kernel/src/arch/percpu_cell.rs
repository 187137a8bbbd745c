//! `PerCpuCell`: the one generic cell the architecture layer needs (its per-CPU records use it);
//! `sync` re-exports it for the layers above.

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
