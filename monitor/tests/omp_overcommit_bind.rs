//! The kernel's OpenMP runtime with more vCPUs than host CPUs and OMP_PROC_BIND or OMP_PLACES
//! set (tests/programs/omp_overcommit_bind.c, 1000 short regions with a reduction). With
//! neither set the team is packed on as many vCPUs as the host has CPUs. OMP_PROC_BIND=false
//! (no binding) spread it over every vCPU instead, and so did a team bound to places, one per
//! vCPU: their waiters spun while the vCPU they waited for had no host CPU (at `--cpus 4` on 2
//! host CPUs 27 s and 23 s against 0.01 s unset; CloverLeaf with OMP_PROC_BIND=spread
//! OMP_PLACES=cores 275 s against 1.7 s now). Now both are packed too, a bound thread keeping
//! its place (`omp_get_place_num`) on its place's vCPU folded onto the packed ones.
//!
//! A first thread that bound itself to each vCPU in turn and then took its whole mask back
//! (hwloc's topology discovery in MPICH's `MPI_Init`) stayed on the last vCPU, outside the
//! packed ones, under both runtimes: the team's master then competed with its packed workers
//! for the host's CPUs (LLNL's AMG at `--cpus 4` on 2 host CPUs 100-300 s against 1 s; this
//! program with 2000 regions 37 s on the kernel's runtime and 10.6 s on libgomp, against 1.2 s
//! and 0.05 s without the probe). Now the mask given back returns it to the packed vCPUs.

mod common;

use std::process::Command;

use common::hostile::{build_with, repo_root, run, Outcome};

fn program() -> std::path::PathBuf {
    let source = repo_root().join("tests/programs/omp_overcommit_bind.c");
    build_with("gcc", &source, "omp_overcommit_bind-pie", &["-fopenmp", "-static-pie"])
}

fn hrt(prog: &std::path::Path, cpus: &str, env: &[(&str, &str)]) -> Outcome {
    hrt_with(prog, cpus, "kernel", &[], env)
}

fn hrt_with(prog: &std::path::Path, cpus: &str, omp: &str, args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    cmd.args(["run", "--cpus", cpus, "--omp", omp, "--"]).arg(prog).args(args).env_remove("OMP_NUM_THREADS");
    cmd.env_remove("OMP_PROC_BIND").env_remove("OMP_PLACES").envs(env.iter().copied());
    run(cmd, None)
}

/// The distinct CPUs of the last team, from the program's stderr line.
fn cpus_used(out: &Outcome) -> usize {
    let words: Vec<&str> = out.stderr.split_whitespace().collect();
    let at = words.iter().position(|w| *w == "cpus").expect("a cpus line on stderr");
    words[at + 1].parse().expect("a CPU count")
}

/// Two vCPUs more than the host has CPUs: (the host's CPUs, the VM's vCPUs as an argument, the
/// program, its native run with `args` and as many threads as the VM has vCPUs).
fn overcommitted(args: &[&str]) -> (usize, String, std::path::PathBuf, Outcome) {
    let host = std::thread::available_parallelism().map_or(2, |n| n.get());
    let cpus = host + 2;
    let prog = program();
    let mut native = Command::new(&prog);
    native.args(args).env("OMP_NUM_THREADS", cpus.to_string());
    let want = run(native, None);
    assert!(want.status.success(), "native run failed: {want:?}");
    (host, cpus.to_string(), prog, want)
}

/// Asserts that `got` (`what`) gave the native sums on at most `host` vCPUs.
fn same_sums_on_packed_vcpus(what: &str, got: &Outcome, want: &Outcome, host: usize) {
    assert!(got.status.success() && !got.hung, "{what}: {got:?}");
    assert_eq!(got.stdout, want.stdout, "{what}: the sums differ from the native run");
    let used = cpus_used(got);
    assert!(used <= host, "{what}: the team ran on {used} vCPUs, more than the host's {host} CPUs");
}

#[test]
fn unbound_and_bound_teams_on_more_vcpus_than_host_cpus() {
    let (host, cpus_arg, prog, want) = overcommitted(&[]);
    for env in [
        &[][..],
        &[("OMP_PROC_BIND", "false")][..],
        &[("OMP_PROC_BIND", "spread"), ("OMP_PLACES", "cores")][..],
        &[("OMP_PLACES", "threads")][..],
    ] {
        let got = hrt(&prog, &cpus_arg, env);
        same_sums_on_packed_vcpus(&format!("{env:?}"), &got, &want, host);
    }
}

#[test]
fn a_master_that_probed_every_vcpu_returns_to_the_packed_ones() {
    let (host, cpus_arg, prog, want) = overcommitted(&["1000", "1"]);
    for omp in ["kernel", "libgomp"] {
        let got = hrt_with(&prog, &cpus_arg, omp, &["1000", "1"], &[]);
        same_sums_on_packed_vcpus(&format!("--omp {omp}"), &got, &want, host);
    }
}
