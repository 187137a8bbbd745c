//! The program's own libgomp with more vCPUs than host CPUs (`kernel/src/linux/spin_throttle.rs`):
//! its spin tests count the host's CPUs, as natively, and its team goes to as many vCPUs as
//! the host has CPUs, while everything the program sees (`omp_get_num_procs`, its results)
//! stays as without the change. Static programs (libgomp's variables named by the symbol
//! table) and dynamically linked ones (the shared libgomp's tests found by their shape).

mod common;

use std::process::Command;

use common::hostile::{build_dynamic, repo_root, run, Outcome};

const THROTTLED: &str = "spin test(s) count the host's";

fn program() -> std::path::PathBuf {
    let prog = repo_root().join("target/programs/omp_spin_throttle-static");
    assert!(prog.exists(), "{} is missing: run tests/programs/build.sh", prog.display());
    prog
}

/// The same program as gcc links it by default, on the shared libgomp.so.1.
fn dynamic_program() -> std::path::PathBuf {
    build_dynamic(&repo_root().join("tests/programs/omp_spin_throttle.c"), "omp_spin_throttle", &["-fopenmp"])
}

/// `hrt run --omp libgomp` (the default, `auto`, would put the program on the kernel's runtime).
fn hrt(prog: &std::path::Path, options: &[&str], threads: &str) -> Outcome {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    cmd.args(["run", "--omp", "libgomp"]).args(options).arg("--").arg(prog).env("OMP_NUM_THREADS", threads);
    run(cmd, None)
}

/// The first line, the processor count, the vCPUs the team ran on at its end and (4th) over
/// its rounds.
fn parse(out: &Outcome) -> (String, usize, usize, usize) {
    let mut lines = out.stdout.lines();
    let first = lines.next().unwrap_or("").to_string();
    let second = lines.next().unwrap_or("");
    let words: Vec<&str> = second.split([' ', ',']).filter(|w| !w.is_empty()).collect();
    let num = |i: usize| words.get(i).and_then(|w| w.parse().ok()).unwrap_or(0);
    (first, num(1), num(4), num(8))
}

#[test]
fn own_libgomp_on_more_vcpus_than_host_cpus_throttles_and_packs_as_natively() {
    throttles_and_packs(&program());
}

#[test]
fn own_shared_libgomp_on_more_vcpus_than_host_cpus_throttles_and_packs_as_natively() {
    throttles_and_packs(&dynamic_program());
}

fn throttles_and_packs(prog: &std::path::Path) {
    let host = std::thread::available_parallelism().map_or(2, |n| n.get());
    let cpus = (host + 2).to_string();
    let mut native = Command::new(prog);
    native.env("OMP_NUM_THREADS", &cpus);
    let want = run(native, None);
    let (want_first, native_procs, _, _) = parse(&want);
    assert!(want_first.starts_with("all checks passed"), "native run failed:\n{}", want.stdout);
    assert_eq!(native_procs, host);

    // Packed (the default): the spin tests are rewritten and the team uses the host's count
    // of vCPUs at most; the program still sees every vCPU.
    let got = hrt(prog, &["--cpus", &cpus, "-v"], &cpus);
    let (first, procs, used, _) = parse(&got);
    assert_eq!(first, want_first, "{}\n{}", got.stdout, got.stderr);
    assert_eq!(procs, host + 2, "omp_get_num_procs changed:\n{}", got.stdout);
    assert!(used >= 1 && used <= host, "the team ran on {used} vCPUs, not at most {host}:\n{}", got.stdout);
    assert!(got.stderr.contains(THROTTLED), "-v does not say the spin tests count the host's CPUs:\n{}", got.stderr);

    // Spread: libgomp is left as it is, and the team takes every vCPU.
    let spread = hrt(prog, &["--cpus", &cpus, "--overcommit", "spread", "-v"], &cpus);
    let (first, procs, _, used) = parse(&spread);
    assert_eq!(first, want_first, "{}\n{}", spread.stdout, spread.stderr);
    assert_eq!((procs, used), (host + 2, host + 2), "{}", spread.stdout);
    assert!(!spread.stderr.contains(THROTTLED), "{}", spread.stderr);

    // Not overcommitted: nothing changes.
    let fits = hrt(prog, &["--cpus", &host.to_string(), "-v"], &cpus);
    assert_eq!(parse(&fits).0, want_first, "{}", fits.stdout);
    assert!(!fits.stderr.contains(THROTTLED), "{}", fits.stderr);
}

/// A stripped program has no symbol table to find libgomp's variables in: it keeps its spin
/// (and, under the default `--omp auto`, its libgomp).
#[test]
fn a_stripped_program_keeps_its_libgomp_spin() {
    let host = std::thread::available_parallelism().map_or(2, |n| n.get());
    let cpus = (host + 2).to_string();
    let stripped = repo_root().join("target/programs/omp_spin_throttle-stripped");
    let status = Command::new("strip").arg("-o").arg(&stripped).arg(program()).status().expect("strip");
    assert!(status.success());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    cmd.args(["run", "--cpus", &cpus, "-v", "--"]).arg(&stripped).env("OMP_NUM_THREADS", &cpus);
    let got = run(cmd, None);
    assert!(got.stdout.starts_with("all checks passed"), "{}\n{}", got.stdout, got.stderr);
    assert!(got.stderr.contains("keeps its spin as it is"), "{}", got.stderr);
    assert!(!got.stderr.contains(THROTTLED), "{}", got.stderr);
}
