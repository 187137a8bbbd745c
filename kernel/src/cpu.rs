//! Per-CPU records, CPU numbers and NUMA zones: the architecture layer's (`arch::cpu`), under
//! the name the layers above use.

pub use crate::arch::cpu::*;
