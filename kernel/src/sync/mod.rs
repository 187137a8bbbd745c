//! Spinning synchronisation: spinlocks (with and without interrupts masked) and per-CPU cells.
//! What blocks a thread (wait queues, condition variables, barriers) is the scheduler's.
pub mod spinlock;

pub use spinlock::{IrqSpinLock, SpinLock};

pub use crate::arch::PerCpuCell;
