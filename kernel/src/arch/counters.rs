//! Per-CPU counters of what waiting costs a vCPU: storage and counting, here at the bottom so
//! that the hardware layer can count its own events (ring-0 entries, interrupts, timer arms);
//! `crate::counters` names and prints them. Each CPU writes only its own line, so a count is a
//! plain load and store.

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

pub const STATS: usize = 12;

#[repr(align(128))]
pub(super) struct Line([AtomicU64; STATS]);

/// Also counted in assembly (`x86_64::ring3::trap_ring3_relocate`: 128 bytes per CPU).
pub(super) static LINES: [Line; hrt_abi::MAX_CPUS] =
    [const { Line([const { AtomicU64::new(0) }; STATS]) }; hrt_abi::MAX_CPUS];

/// Adds `n` to this CPU's counter `s`.
#[inline]
pub fn add(s: Stat, n: u64) {
    let c = &LINES[super::cpu::id()].0[s as usize];
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// CPU `cpu`'s counters, in `Stat` order.
pub fn line(cpu: usize) -> [u64; STATS] {
    let mut line: [u64; STATS] = core::array::from_fn(|i| LINES[cpu].0[i].load(Ordering::Relaxed));
    // The interrupt entry's short paths count in the CPU's own record (one instruction).
    let (noted, deferred) = super::x86_64::cpu::short_path_irqs(cpu);
    line[Stat::Eois as usize] += noted;
    line[Stat::Irqs as usize] += deferred;
    line
}
