//! Monotonic time in nanoseconds from the TSC, whose frequency the monitor reports.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::arch::instr::{rdtsc, rdtsc_ordered};

static BOOT_TSC: AtomicU64 = AtomicU64::new(0);
static TSC_KHZ: AtomicU64 = AtomicU64::new(1);
/// ns = (ticks * NS_MULT) >> 32, precomputed to avoid a division per reading.
static NS_MULT: AtomicU64 = AtomicU64::new(0);
/// ticks = (ns * TICKS_MULT) >> 32.
static TICKS_MULT: AtomicU64 = AtomicU64::new(0);

pub fn init(tsc_khz: u64) {
    let khz = tsc_khz.max(1);
    BOOT_TSC.store(rdtsc(), Ordering::Relaxed);
    TSC_KHZ.store(khz, Ordering::Relaxed);
    NS_MULT.store((1_000_000u64 << 32) / khz, Ordering::Relaxed);
    TICKS_MULT.store(((khz as u128) << 32).div_ceil(1_000_000) as u64, Ordering::Relaxed);
}

/// (TSC at time zero, ns multiplier): ns = ((tsc - zero) * mult) >> 32. For the vDSO.
pub fn tsc_parameters() -> (u64, u64) {
    (BOOT_TSC.load(Ordering::Relaxed), NS_MULT.load(Ordering::Relaxed))
}

pub fn tsc_khz() -> u64 {
    TSC_KHZ.load(Ordering::Relaxed)
}

pub fn ticks_to_ns(ticks: u64) -> u64 {
    ((ticks as u128 * NS_MULT.load(Ordering::Relaxed) as u128) >> 32) as u64
}

/// TSC ticks in `ns` nanoseconds, rounded up (so deadlines never come early).
pub fn ns_to_ticks(ns: u64) -> u64 {
    // Saturating: a program's timeout of centuries must mean "never", not wrap to a short one.
    u64::try_from((ns as u128 * TICKS_MULT.load(Ordering::Relaxed) as u128) >> 32).unwrap_or(u64::MAX).saturating_add(1)
}

/// Nanoseconds since boot: the program's clocks and omp_get_wtime, so read in order with
/// the loads before it (`rdtsc_ordered`).
pub fn now_ns() -> u64 {
    ticks_to_ns(rdtsc_ordered().wrapping_sub(BOOT_TSC.load(Ordering::Relaxed)))
}

/// The TSC now.
#[inline(always)]
pub fn ticks() -> u64 {
    rdtsc()
}
