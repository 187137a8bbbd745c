//! Per-CPU counters of what waiting costs a vCPU (halts, kicks, idle polling, the OpenMP
//! runtime's spins and sleeps, ring-0 entries, interrupts, timer arms), printed with
//! `hrt run -v` when the vCPUs outnumber the host's CPUs, where those costs decide the run
//! time (docs/benchmarks.md, "More vCPUs than host CPUs"). Each CPU writes only its own
//! line, so a count is a plain load and store.

use core::sync::atomic::{AtomicU64, Ordering};

#[derive(Clone, Copy)]
pub enum Stat {
    /// The idle loop halted the vCPU, and the ticks it stayed halted.
    Halts,
    HaltTicks,
    /// Ticks the idle loop polled (ready to run nothing) before halting or running a thread.
    PollTicks,
    /// Kick IPIs this CPU sent to halted vCPUs.
    Kicks,
    /// Waits of the kernel's OpenMP runtime that went to sleep, the futex waits they made (more
    /// than one when a wake-up found the wait not over), and the ticks from the start of their
    /// spin to the sleep (with the turns their spin gave to other threads of the CPU).
    OmpSleeps,
    OmpWaits,
    OmpSpinTicks,
    /// Calls into ring 0 from ring 3 (`arch::ring3::privileged`, halts included) and the
    /// ticks they took (on PVM each costs emulated ring 0: 20 us and more).
    Ring0Calls,
    Ring0Ticks,
    /// Interrupts that stopped ring-3 code, handled later in ring 3.
    Irqs,
    /// Timer arms (each a ring-0 entry) and interrupt acknowledgements.
    Deadlines,
    Eois,
}

const STATS: usize = 12;
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

#[repr(align(128))]
struct Line([AtomicU64; STATS]);

static LINES: [Line; hrt_abi::MAX_CPUS] = [const { Line([const { AtomicU64::new(0) }; STATS]) }; hrt_abi::MAX_CPUS];

/// Adds `n` to this CPU's counter `s`.
#[inline]
pub fn add(s: Stat, n: u64) {
    let c = &LINES[crate::cpu::id()].0[s as usize];
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// One log line per CPU (`hrt run -v`, at the end of the program).
pub fn print() {
    let per_ms = crate::time::ns_to_ticks(1_000_000).max(1);
    for (cpu, line) in LINES.iter().enumerate().take(crate::cpu::count()) {
        let mut text = alloc::string::String::new();
        for (i, c) in line.0.iter().enumerate() {
            let v = c.load(Ordering::Relaxed);
            let v = if TICKS[i] { v / per_ms } else { v };
            let _ = core::fmt::write(&mut text, format_args!(" {} {v},", NAMES[i]));
        }
        crate::kinfo!("kernel: cpu {cpu}:{}", text.trim_end_matches(','));
    }
}
