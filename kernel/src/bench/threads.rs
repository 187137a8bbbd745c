//! Thread creation, create+join, and fork/join over k CPUs.

use alloc::vec::Vec;

use super::stats::{report, Plan};
use crate::sched::{self, ThreadHandle, ThreadOptions};
use crate::time::ticks;

fn nothing(arg: u64) -> u64 {
    arg
}

fn create_on(cpu: Option<usize>) -> ThreadHandle {
    let opts = ThreadOptions::named("bench");
    let opts = match cpu {
        Some(c) => opts.on_cpu(c),
        None => opts,
    };
    sched::create(nothing, 0, opts).expect("bench: thread creation failed")
}

/// Another CPU than the caller's when there is one.
fn other_cpu() -> usize {
    if crate::cpu::count() > 1 {
        1
    } else {
        0
    }
}

/// `thread_create`: the creation call alone (the thread is joined outside the timing).
pub fn thread_create(plan: &Plan) {
    let target = other_cpu();
    let s = plan.run(|| {
        let t0 = ticks();
        let h = create_on(Some(target));
        let dt = ticks() - t0;
        h.join();
        dt
    });
    report("thread_create", &s, "threads=1");
}

/// `thread_create_seq.N`: N creations in a row (placed by the scheduler), then N joins.
pub fn thread_create_seq(plan: &Plan) {
    let mut n = 1;
    while n <= 256 {
        let s = plan.run(|| {
            let mut hs = Vec::with_capacity(n);
            let t0 = ticks();
            for _ in 0..n {
                hs.push(create_on(None));
            }
            let dt = ticks() - t0;
            hs.into_iter().for_each(|h| {
                h.join();
            });
            dt
        });
        report(&alloc::format!("thread_create_seq.{n}"), &s, &alloc::format!("threads={n}"));
        n *= 2;
    }
}

/// `create_join`: create a thread on another CPU and wait for it to finish.
pub fn create_join(plan: &Plan) {
    let target = other_cpu();
    let s = plan.run(|| {
        let t0 = ticks();
        create_on(Some(target)).join();
        ticks() - t0
    });
    report("create_join", &s, "threads=1");
}

/// `forkjoin.k`: fork k threads, one per CPU 0..k, and join them all.
pub fn forkjoin(plan: &Plan) {
    let ncpu = crate::cpu::count();
    for k in 1..=ncpu {
        let s = plan.run(|| {
            let t0 = ticks();
            let hs: Vec<_> = (0..k).map(|i| create_on(Some(i))).collect();
            hs.into_iter().for_each(|h| {
                h.join();
            });
            ticks() - t0
        });
        report(&alloc::format!("forkjoin.{k}"), &s, &alloc::format!("threads={k}"));
    }
}
