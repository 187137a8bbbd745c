//! In-kernel micro benchmarks, run by `hrt` when the command line is `bench [quick]`: the
//! kernel's own primitives timed with the TSC, printed as `RESULT suite=micro ...` lines
//! (the format every HRT benchmark uses; notes/bench-format.md) on the console.
//!
//! Names match the Linux-side programs (bench/micro/micro.c) so the `hrt bench` harness can
//! pair them. With `--idle halt` only `cond_wakeup` runs (as `cond_wakeup.halt`): the other
//! primitives do not depend on what idle CPUs do.

mod ipi;
mod locks;
mod stats;
mod threads;
mod timer;
mod wakeup;

use hrt_abi::Platform;
use stats::Plan;

/// Repetitions per benchmark: the full count and the `quick` one.
const REPS: usize = 1000;
const QUICK_REPS: usize = 200;

/// Per-benchmark time budget in ms. Where the kernel runs in emulated guest ring 0 (a PVM host
/// with `--kernel-ring 0`, ~3.7 K cycles per kernel instruction), 1,000 repetitions of the
/// slower benchmarks would take minutes, so the budget stops them early and the line says so;
/// elsewhere (ring 0 natively, or the kernel in ring 3) it is far beyond what they take.
fn budget_ms(platform: Platform, quick: bool) -> u64 {
    let emulated = platform == Platform::PvmEmulated && !crate::arch::ring3::active();
    match (emulated, quick) {
        (true, true) => 250,
        (true, false) => 800,
        (false, _) => 120_000,
    }
}

/// Runs the suite; returns the kernel's exit status.
pub fn run<'a>(mut words: impl Iterator<Item = &'a str>) -> i32 {
    let quick = words.any(|w| w == "quick");
    let platform = Platform::from_u32(crate::bootinfo::get().platform);
    let ms = budget_ms(platform, quick);
    let plan = Plan { reps: if quick { QUICK_REPS } else { REPS }, budget: crate::time::ns_to_ticks(ms * 1_000_000) };
    let halt = crate::sched::idle_halts();
    kprintln!(
        "# hrt in-kernel benchmarks: {} CPU(s), idle {}, {} repetitions or {ms} ms each, platform: {}",
        crate::cpu::count(),
        if halt { "halt" } else { "poll" },
        plan.reps,
        platform.describe()
    );
    let start = crate::time::now_ns();
    if halt {
        wakeup::cond_wakeup(&plan);
    } else {
        threads::thread_create(&plan);
        threads::thread_create_seq(&plan);
        threads::create_join(&plan);
        wakeup::cond_wakeup(&plan);
        ipi::ipi_roundtrip(&plan);
        timer::timer_arm(&plan);
        locks::spin_uncontended(&plan);
        locks::spin_contended(&plan);
        locks::barrier(&plan);
        threads::forkjoin(&plan);
    }
    kprintln!("# in-kernel benchmarks took {} ms", (crate::time::now_ns() - start) / 1_000_000);
    0
}
