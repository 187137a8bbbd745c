//! `cond_wakeup`: a thread on CPU 1 blocked on a condition variable is signalled from CPU 0;
//! the sample is the TSC from just before the signal (after the predicate is set) to the waiter running again. With
//! polling idle (`cond_wakeup.poll`) CPU 1 notices its run queue; with halting idle
//! (`cond_wakeup.halt`) the wake-up kicks it out of `hlt` with an IPI.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use super::stats::{report, Plan};
use crate::sched::CondVar;
use crate::sched::{self, thread::BLOCKED, Thread, ThreadOptions};
use crate::sync::SpinLock;
use crate::time::ticks;

const WAITER_CPU: usize = 1;
const STOP: u64 = u64::MAX;

struct Shared {
    generation: SpinLock<u64>,
    cv: CondVar,
    waiter: AtomicPtr<Thread>,
    woke_at: AtomicU64,
}

fn waiter(sh: &Shared) -> u64 {
    sh.waiter.store(sched::current(), Ordering::Release);
    let mut seen = 0;
    let mut g = sh.generation.lock();
    loop {
        while *g == seen {
            g = sh.cv.wait(g);
        }
        let t1 = ticks();
        seen = *g;
        if seen == STOP {
            return 0;
        }
        sh.woke_at.store(t1, Ordering::Release);
    }
}

/// Spins until the waiter is off its CPU (blocked) and, with halting idle, that CPU sleeps.
fn wait_until_parked(sh: &Shared, halt: bool) {
    loop {
        let t = sh.waiter.load(Ordering::Acquire);
        // SAFETY: the waiter's record lives until it is joined, after the last sample.
        let blocked = !t.is_null() && unsafe { (*t).state.load(Ordering::SeqCst) } == BLOCKED;
        let parked = !halt || crate::sched::on_cpu(WAITER_CPU).halted.load(Ordering::SeqCst);
        if blocked && parked {
            return;
        }
        core::hint::spin_loop();
    }
}

pub fn cond_wakeup(plan: &Plan) {
    let halt = sched::idle_halts();
    let name = if halt { "cond_wakeup.halt" } else { "cond_wakeup.poll" };
    if crate::cpu::count() < 2 {
        kprintln!("# {name}: needs 2 CPUs, skipped");
        return;
    }
    let sh = Arc::new(Shared {
        generation: SpinLock::new(0),
        cv: CondVar::new(),
        waiter: AtomicPtr::new(core::ptr::null_mut()),
        woke_at: AtomicU64::new(0),
    });
    let w = sh.clone();
    let h = sched::spawn(ThreadOptions::named("waiter").on_cpu(WAITER_CPU), move || waiter(&w))
        .expect("bench: thread creation failed");
    let s = plan.run(|| {
        wait_until_parked(&sh, halt);
        sh.woke_at.store(0, Ordering::Release);
        // As on the Linux side: the predicate is set under the lock, then the signal is timed.
        *sh.generation.lock() += 1;
        let t0 = ticks();
        sh.cv.signal();
        loop {
            let t1 = sh.woke_at.load(Ordering::Acquire);
            if t1 != 0 {
                return t1.saturating_sub(t0);
            }
            core::hint::spin_loop();
        }
    });
    *sh.generation.lock() = STOP;
    sh.cv.broadcast();
    h.join();
    report(name, &s, "threads=2");
}
