//! Spinlock acquire+release alone and under contention from every other CPU, and a barrier
//! across all CPUs.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use super::stats::{report, Plan, Samples};
use crate::sched::Barrier;
use crate::sched::{self, ThreadHandle, ThreadOptions};
use crate::sync::SpinLock;
use crate::time::ticks;

/// Lock+unlock pairs per sample (per CPU), as many as bench/micro/micro.c times; the line
/// reports cycles per pair.
const BATCH: u64 = 1000;

/// `BATCH` pairs alone, touching nothing under the lock, as micro.c's `spin_uncontended`.
fn batch(lock: &SpinLock<u64>) -> u64 {
    let t0 = ticks();
    for _ in 0..BATCH {
        drop(lock.lock());
    }
    ticks() - t0
}

/// One thread on each CPU but this one (CPU 0), running `f`.
fn helpers(f: impl Fn() -> u64 + Send + Sync + Clone + 'static) -> Vec<ThreadHandle> {
    (1..crate::cpu::count())
        .map(|cpu| {
            let f = f.clone();
            sched::spawn(ThreadOptions::named("bench").on_cpu(cpu), f).expect("bench: thread creation failed")
        })
        .collect()
}

fn join_all(hs: Vec<ThreadHandle>) {
    hs.into_iter().for_each(|h| {
        h.join();
    });
}

pub fn spin_uncontended(plan: &Plan) {
    let lock = SpinLock::new(0u64);
    let s = plan.run(|| batch(&lock));
    report("spin_uncontended", &Samples::per_op(s, BATCH), "threads=1");
}

/// Every CPU takes and drops one lock `BATCH` times between two barriers; a sample is
/// the time from the first barrier until all are through, per acquisition of all CPUs: what
/// bench/micro/micro.c measures of a pthread spinlock. (It timed CPU 0's pairs alone while
/// the others took the lock without pause, which counted each pair with the other CPU's
/// turns between: about twice the Linux side's figure at 2 CPUs for the same lock traffic.)
pub fn spin_contended(plan: &Plan) {
    let ncpu = crate::cpu::count();
    let lock = Arc::new(SpinLock::new(0u64));
    let bar = Arc::new(Barrier::new(ncpu));
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = |lock: &SpinLock<u64>| {
        for _ in 0..BATCH {
            *lock.lock() += 1;
        }
    };
    let (l, b, st) = (lock.clone(), bar.clone(), stop.clone());
    let hs = helpers(move || loop {
        b.wait();
        if st.load(Ordering::Acquire) {
            return 0;
        }
        rounds(&l);
        b.wait();
    });
    let s = plan.run(|| {
        bar.wait();
        let t0 = ticks();
        rounds(&lock);
        bar.wait();
        ticks() - t0
    });
    stop.store(true, Ordering::Release);
    bar.wait();
    join_all(hs);
    report("spin_contended", &Samples::per_op(s, BATCH * ncpu as u64), &alloc::format!("threads={ncpu}"));
}

pub fn barrier(plan: &Plan) {
    let ncpu = crate::cpu::count();
    let bar = Arc::new(Barrier::new(ncpu));
    let stop = Arc::new(AtomicBool::new(false));
    let (b, st) = (bar.clone(), stop.clone());
    let hs = helpers(move || loop {
        b.wait();
        b.wait();
        if st.load(Ordering::Acquire) {
            return 0;
        }
    });
    // Each round: a timed crossing, then an untimed one after which everybody reads the
    // decision to stop, so all parties leave after the same round.
    let mut values = Vec::new();
    let start = ticks();
    loop {
        let t0 = ticks();
        bar.wait();
        values.push(ticks() - t0);
        let last = plan.done(values.len(), start);
        stop.store(last, Ordering::Release);
        bar.wait();
        if last {
            break;
        }
    }
    join_all(hs);
    report("barrier", &Samples::from_values(values, plan, 1), &alloc::format!("threads={ncpu}"));
}
