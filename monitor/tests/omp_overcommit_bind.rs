//! The kernel's OpenMP runtime with more vCPUs than host CPUs and OMP_PROC_BIND or OMP_PLACES
//! set (tests/programs/omp_overcommit_bind.c, 1000 short regions with a reduction). With
//! neither set the team is packed on as many vCPUs as the host has CPUs. OMP_PROC_BIND=false
//! (no binding) spread it over every vCPU instead, and so did a team bound to places, one per
//! vCPU: their waiters spun while the vCPU they waited for had no host CPU (at `--cpus 4` on 2
//! host CPUs 27 s and 23 s against 0.01 s unset; CloverLeaf with OMP_PROC_BIND=spread
//! OMP_PLACES=cores 275 s against 1.7 s now). Now both are packed too, a bound thread keeping
//! its place (`omp_get_place_num`) on its place's vCPU folded onto the packed ones.

mod common;

use std::process::Command;

use common::hostile::{build_with, repo_root, run, Outcome};

fn program() -> std::path::PathBuf {
    let source = repo_root().join("tests/programs/omp_overcommit_bind.c");
    build_with("gcc", &source, "omp_overcommit_bind-pie", &["-fopenmp", "-static-pie"])
}

fn hrt(prog: &std::path::Path, cpus: &str, env: &[(&str, &str)]) -> Outcome {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    cmd.args(["run", "--cpus", cpus, "--omp", "kernel", "--"]).arg(prog).env_remove("OMP_NUM_THREADS");
    cmd.env_remove("OMP_PROC_BIND").env_remove("OMP_PLACES").envs(env.iter().copied());
    run(cmd, None)
}

/// The distinct CPUs of the last team, from the program's stderr line.
fn cpus_used(out: &Outcome) -> usize {
    let words: Vec<&str> = out.stderr.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "cpus").expect("a cpus line on stderr");
    words[at + 1].parse().expect("a CPU count")
}

#[test]
fn unbound_and_bound_teams_on_more_vcpus_than_host_cpus() {
    let host = std::thread::available_parallelism().map_or(2, |n| n.get());
    let cpus = host + 2;
    let prog = program();
    let mut native = Command::new(&prog);
    native.env("OMP_NUM_THREADS", cpus.to_string());
    let want = run(native, None);
    assert!(want.status.success(), "native run failed: {want:?}");
    let cpus_arg = cpus.to_string();
    for env in [
        &[][..],
        &[("OMP_PROC_BIND", "false")][..],
        &[("OMP_PROC_BIND", "spread"), ("OMP_PLACES", "cores")][..],
        &[("OMP_PLACES", "threads")][..],
    ] {
        let got = hrt(&prog, &cpus_arg, env);
        assert!(got.status.success() && !got.hung, "{env:?}: {got:?}");
        assert_eq!(got.stdout, want.stdout, "{env:?}: the sums differ from the native run");
        let used = cpus_used(&got);
        assert!(used <= host, "{env:?}: the team ran on {used} vCPUs, more than the host's {host} CPUs");
    }
}
