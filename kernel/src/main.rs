//! The HRT kernel: an AeroKernel for parallel runtimes (identity-mapped memory, per-CPU state,
//! cheap kernel threads, tickless LAPIC timers and IPIs), booted by the `hrt` monitor.
#![no_std]
#![no_main]
// Kernel types are built by `const fn new()` for statics; `Default` would add nothing.
#![allow(clippy::new_without_default)]

extern crate alloc;

#[macro_use]
pub mod console;
pub mod arch;
pub mod bench;
pub mod boot;
pub mod bootinfo;
pub mod counters;
pub mod cpu;
pub mod linux;
pub mod mem;
pub mod omp;
pub mod panic;
pub mod random;
pub mod sched;
pub mod selftest;
pub mod sync;
pub mod time;
