//! Architecture-specific code. Only x86-64 exists; everything above `arch` uses this facade.
pub mod x86_64;
pub use self::x86_64::*;
pub mod counters;
pub mod percpu_cell;
pub use percpu_cell::PerCpuCell;
