//! Sleep and preemption.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::TestResult;
use crate::ensure;
use crate::sched::{self, ThreadOptions};
use crate::time;

pub fn sleep_never_early() -> TestResult {
    const DURATIONS_NS: [u64; 5] = [0, 10_000, 100_000, 1_000_000, 3_000_000];
    let ncpu = crate::cpu::count();
    kprintln!("  sleeps of {DURATIONS_NS:?} ns on each of {ncpu} CPU(s) at once");
    let mut hs = Vec::new();
    for cpu in 0..ncpu {
        hs.push(
            sched::spawn(ThreadOptions::named("sleeper").on_cpu(cpu), || {
                let mut early = 0;
                for d in DURATIONS_NS {
                    let t0 = time::now_ns();
                    sched::sleep_ns(d);
                    if time::now_ns() - t0 < d {
                        early += 1;
                    }
                }
                early
            })
            .map_err(|e| alloc::format!("{e:?}"))?,
        );
    }
    let early: u64 = hs.into_iter().map(|h| h.join()).sum();
    ensure!(early == 0, "{early} sleep(s) ended early");
    Ok(())
}

/// Two threads on one CPU that sleep a few microseconds at a time take turns: each sleep is a
/// chance for the other. A sleep that ended before its thread had left the CPU used to return
/// with the other thread still waiting in the run queue (arming the timer for it, a ring-0
/// entry, outlasts such a sleep on a PVM host), and one thread ran all its rounds while the
/// other waited. Checks how far either gets ahead of the other, not how long anything takes.
pub fn sleepers_take_turns() -> TestResult {
    const SLEEPS_NS: [u64; 2] = [1_000, 20_000];
    const ROUNDS: u64 = 1_000;
    /// Turns taken fairly keep the lead at 1 (7-8 measured with `--preempt 1000`); starved,
    /// the other thread stays at 0.
    const MAX_LEAD: u64 = 100;
    let cpu = crate::cpu::count() - 1;
    for ns in SLEEPS_NS {
        kprintln!("  two threads on CPU {cpu}, {ROUNDS} sleeps of {ns} ns each");
        let counts = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let started = Arc::new(AtomicU64::new(0));
        let mut hs = Vec::new();
        for me in 0..2 {
            let (c, started) = (counts.clone(), started.clone());
            hs.push(
                sched::spawn(ThreadOptions::named("turn_sleeper").on_cpu(cpu), move || {
                    // Both count from the same start (the second is created a while after the
                    // first on another CPU); a yield lets the other in where it waits already.
                    started.fetch_add(1, Ordering::SeqCst);
                    while started.load(Ordering::SeqCst) < 2 {
                        sched::yield_now();
                        core::hint::spin_loop();
                    }
                    let mut lead = 0;
                    for _ in 0..ROUNDS {
                        sched::sleep_ns(ns);
                        let mine = c[me].fetch_add(1, Ordering::SeqCst) + 1;
                        let other = c[1 - me].load(Ordering::SeqCst);
                        if other < ROUNDS {
                            lead = lead.max(mine.saturating_sub(other));
                        }
                    }
                    lead
                })
                .map_err(|e| alloc::format!("{e:?}"))?,
            );
        }
        let lead = hs.into_iter().map(|h| h.join()).max().unwrap_or(0);
        kprintln!("  largest lead of one thread over the other: {lead} rounds");
        ensure!(lead <= MAX_LEAD, "with {ns} ns sleeps one thread got {lead} rounds ahead: the other was starved");
    }
    Ok(())
}

/// Two busy threads on one CPU both make progress only if the timer preempts them.
pub fn preemption() -> TestResult {
    if !sched::preemption_enabled() {
        kprintln!("  preemption is off (hrt selftest --preempt US turns it on): checking it stays off");
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let cpu = crate::cpu::count() - 1;
        let spinner = sched::spawn(ThreadOptions::named("spinner").on_cpu(cpu), move || {
            while !s.load(Ordering::Acquire) {
                core::hint::spin_loop();
            }
            0
        })
        .map_err(|e| alloc::format!("{e:?}"))?;
        let ran = Arc::new(AtomicBool::new(false));
        let r = ran.clone();
        let other = sched::spawn(ThreadOptions::named("starved").on_cpu(cpu), move || {
            r.store(true, Ordering::Release);
            0
        })
        .map_err(|e| alloc::format!("{e:?}"))?;
        if cpu != crate::cpu::id() {
            sched::sleep_ns(2_000_000);
            let ran_early = ran.load(Ordering::Acquire);
            stop.store(true, Ordering::Release);
            spinner.join();
            other.join();
            ensure!(!ran_early, "a busy thread was preempted with preemption off");
        } else {
            stop.store(true, Ordering::Release);
            spinner.join();
            other.join();
        }
        return Ok(());
    }
    kprintln!("  two busy threads on one CPU, each waiting to see the other's counter move");
    let cpu = crate::cpu::count() - 1;
    let counters = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let mut hs = Vec::new();
    for me in 0..2 {
        let c = counters.clone();
        hs.push(
            sched::spawn(ThreadOptions::named("busy").on_cpu(cpu), move || {
                let deadline = time::now_ns() + 5_000_000_000;
                // Count until the other thread has counted too (it can only if we are preempted).
                loop {
                    c[me].fetch_add(1, Ordering::Relaxed);
                    if c[1 - me].load(Ordering::Relaxed) > 0 && c[me].load(Ordering::Relaxed) > 1 {
                        return 0;
                    }
                    if time::now_ns() > deadline {
                        return 1;
                    }
                }
            })
            .map_err(|e| alloc::format!("{e:?}"))?,
        );
    }
    let failures: u64 = hs.into_iter().map(|h| h.join()).sum();
    ensure!(failures == 0, "a busy thread never saw the other run: no preemption");
    Ok(())
}
