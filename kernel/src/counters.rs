//! Per-CPU counters of what waiting costs a vCPU (halts, kicks, idle polling, the OpenMP
//! runtime's spins and sleeps, ring-0 entries, interrupts, timer arms), printed with
//! `hrt run -v` when the vCPUs outnumber the host's CPUs, where those costs decide the run
//! time (docs/benchmarks.md, "More vCPUs than host CPUs"). Each CPU writes only its own
//! line, so a count is a plain load and store.

use crate::arch::counters::STATS;
pub use crate::arch::counters::{add, Stat};

const NAMES: [&str; STATS] = [
    "halts",
    "halted ms",
    "polled ms",
    "kicks",
    "omp sleeps",
    "futex waits",
    "omp spun ms",
    "ring0 calls",
    "ring0 ms",
    "irqs",
    "deadlines",
    "eois",
];
/// Which counters hold TSC ticks (shown in ms).
const TICKS: [bool; STATS] = [false, true, true, false, false, false, true, false, true, false, false, false];

/// One log line per CPU (`hrt run -v`, at the end of the program).
pub fn print() {
    let per_ms = crate::time::ns_to_ticks(1_000_000).max(1);
    for cpu in 0..crate::cpu::count() {
        let mut text = alloc::string::String::new();
        for (i, v) in crate::arch::counters::line(cpu).into_iter().enumerate() {
            let v = if TICKS[i] { v / per_ms } else { v };
            let _ = core::fmt::write(&mut text, format_args!(" {} {v},", NAMES[i]));
        }
        let stolen_ms = crate::arch::steal_time::stolen_ns(cpu) / 1_000_000;
        crate::kinfo!("kernel: cpu {cpu}:{} stolen ms {stolen_ms}", text);
    }
}
