//! Preemption by default (issue 10): threads that outnumber the vCPUs and spin-wait for each
//! other finish under `hrt run` as they do on Linux, because the kernel starts a CPU's
//! preemption clock whenever a thread waits for that CPU (and only then: a CPU running one
//! thread takes no timer interrupts). `--preempt 0` turns it off.

mod common;
use common::hostile::{assert_same, build, hrt, native};

#[test]
fn spinning_threads_that_outnumber_the_vcpus_finish() {
    let prog = build("sched_spin_handoff", &[]);
    let native_out = native(&prog, &[]);
    for cpus in ["1", "2"] {
        let out = hrt(&["--cpus", cpus], &prog, &[]);
        assert_same(&format!("sched_spin_handoff --cpus {cpus}"), &native_out, &out);
    }
}
