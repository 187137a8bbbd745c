//! Preemption by default (issue 10): threads that outnumber the vCPUs and spin-wait for each
//! other finish under `hrt run` as they do on Linux, because the kernel starts a CPU's
//! preemption clock whenever a thread waits for that CPU (and only then: a CPU running one
//! thread takes no timer interrupts). `--preempt 0` turns it off.

mod common;
use common::hostile::{assert_same, assert_same_on_1_and_2_cpus, build, hrt, native, passes_natively_and_same_on};

#[test]
fn spinning_threads_that_outnumber_the_vcpus_finish() {
    let prog = build("sched_spin_handoff", &[]);
    let native_out = native(&prog, &[]);
    for cpus in ["1", "2", OVERCOMMITTED] {
        let out = hrt(&["--cpus", cpus], &prog, &[]);
        assert_same(&format!("sched_spin_handoff --cpus {cpus}"), &native_out, &out);
    }
}

/// More vCPUs than the 2-CPU test host has: handlers of interrupts that stop ring-3 code then
/// run in ring 3, and spinning program threads are looked at (`sched/spin_look.rs`).
const OVERCOMMITTED: &str = "4";

/// Two threads on one vCPU, woken together from another vCPU, then spinning until both ran:
/// the second must get the CPU even when its wake-up found that vCPU idle, about to run the
/// first (it hung there at `--idle poll`, where an idle vCPU never halts and so gets no kick).
#[test]
fn threads_woken_together_on_one_vcpu_both_run() {
    let prog = build("sched_wake_pair", &[]);
    let native_out = native(&prog, &[]);
    for options in [&["--cpus", "1"][..], &["--cpus", "2"], &["--cpus", "2", "--idle", "poll"]] {
        let out = hrt(options, &prog, &[]);
        assert_same(&format!("sched_wake_pair {}", options.join(" ")), &native_out, &out);
    }
}

/// Spinning threads that outnumber the vCPUs, preempted and interrupted by TLB shootdowns
/// while they check that every general register still holds their own value.
#[test]
fn preempted_threads_keep_their_registers() {
    let prog = build("sched_regs_preempt", &[]);
    let native_out = native(&prog, &[]);
    assert_same_on_1_and_2_cpus("sched_regs_preempt", &prog, &[], &native_out);
    let out = hrt(&["--cpus", OVERCOMMITTED], &prog, &[]);
    assert_same(&format!("sched_regs_preempt --cpus {OVERCOMMITTED}"), &native_out, &out);
}

/// A stream of TLB-shootdown interrupts from a thread that maps and unmaps in a loop, while
/// threads are created and joined on the other vCPU: each interrupt that lands while a thread
/// returns from an earlier one is taken in place of that return, never on a new frame below
/// it. Stacked frames once overflowed 16 KiB kernel stacks (`hrt bench` panicked in CI), and
/// this program died with a kernel page fault in every run.
#[test]
fn interrupts_in_a_stream_do_not_pile_up_on_kernel_stacks() {
    let prog = build("irq_storm", &[]);
    let native_out = native(&prog, &[]);
    for round in 0..3 {
        let out = hrt(&["--cpus", "2"], &prog, &[]);
        assert_same(&format!("irq_storm --cpus 2 (run {round})"), &native_out, &out);
    }
    let out = hrt(&["--cpus", OVERCOMMITTED], &prog, &[]);
    assert_same(&format!("irq_storm --cpus {OVERCOMMITTED}"), &native_out, &out);
}

/// Two threads on two vCPUs sleeping 0.5 ms thousands of times: the idle loop, interrupted on
/// its way to the halt by the timer that ends a sleep, must not be preempted there (it halted
/// later with no timer armed for the next sleeper, a lost wake-up: the program hung). Run a few
/// times, as the hang took one run in about three (with as many vCPUs as host CPUs).
#[test]
fn short_sleeps_on_two_vcpus_all_end() {
    let prog = build("sched_short_sleeps", &["-pthread"]);
    let native_out = native(&prog, &[]);
    // As many vCPUs as host CPUs: `--idle auto` then polls 1 ms and halts (the failing mode).
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get()).max(2).to_string();
    for _ in 0..4 {
        let out = hrt(&["--cpus", &cpus], &prog, &[]);
        assert_same(&format!("sched_short_sleeps --cpus {cpus}"), &native_out, &out);
    }
}

/// Short sleeps beside threads that never block (Go's sysmon beside the runtime's busy
/// threads): with a spinner waiting in the run queue the kernel arms no timer for the sleeper
/// (the preemption tick and thread switches end its sleeps), and with `--idle halt` an idle
/// vCPU keeps polling for a sleeper due within its polling time. Every sleep ends, none early.
#[test]
fn short_sleeps_beside_spinning_threads_end_and_never_early() {
    let prog = build("sched_sleep_beside_spinners", &["-pthread"]);
    let native_out = native(&prog, &[]);
    for cpus in ["1", "2", OVERCOMMITTED] {
        let out = hrt(&["--cpus", cpus], &prog, &[]);
        assert_same(&format!("sched_sleep_beside_spinners --cpus {cpus}"), &native_out, &out);
    }
}

/// Two threads pinned to one vCPU, each sleeping 1 us and then 20 us at a time
/// (tests/programs/hostile/sched_sleep_turns.c): each sleep lets the other thread run, so
/// neither gets far ahead. A sleep that ended before its thread left the vCPU (arming the
/// timer, a ring-0 entry, outlasts a short sleep on a PVM host) used to keep the vCPU, and with
/// `--preempt 0` one thread did all its 1,000 sleeps while the other waited to start.
#[test]
fn threads_sleeping_briefly_on_one_vcpu_take_turns() {
    let prog = build("sched_sleep_turns", &[]);
    let native_out = native(&prog, &[]);
    assert_eq!(native_out.code(), 0, "natively: {native_out:?}");
    for options in [&["--cpus", "1", "--preempt", "0"][..], &["--cpus", "2", "--preempt", "0"], &["--cpus", "1"]] {
        let out = hrt(options, &prog, &[]);
        assert_same(&format!("sched_sleep_turns {}", options.join(" ")), &native_out, &out);
    }
}

/// 8 spinning threads and a spinning main thread on 2 (and, over the 2-CPU host, 4) vCPUs:
/// every thread runs at the same time as main at some point
/// (tests/programs/hostile/sched_spread_spinners.c). Threads never moved between busy vCPUs:
/// those placed beside main never ran beside it, and the program (as crossbeam-deque's
/// `fifo::no_starvation`) waited for good; a crowded vCPU now sends a thread whose turn ended
/// to a less crowded one now and then (`sched::balance::spread_if_crowded`).
#[test]
fn spinning_threads_on_busy_vcpus_all_run_beside_the_main_thread() {
    passes_natively_and_same_on("sched_spread_spinners", Some("every thread ran beside main"), &["2", OVERCOMMITTED]);
}
