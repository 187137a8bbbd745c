//! OpenMP programs built with clang on LLVM's libomp (Debian's is a shared library): they must
//! print what they print natively, and with more vCPUs than host CPUs their threads go to as
//! many vCPUs as the host has CPUs (`flags::PACK_THREADS`), where libomp's `sched_yield` in its
//! spin waits hands the vCPU to the thread waited for.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::hostile::{assert_same, repo_root, run, Outcome};

/// What `hrt run -v` says when it packs libomp's threads.
const PACKED: &str = "its threads go to the first";

/// Builds tests/programs/NAME.c with `clang -O2 -fopenmp` (libomp, dynamically linked).
fn build(name: &str) -> PathBuf {
    let root = repo_root();
    let source = root.join("tests/programs").join(format!("{name}.c"));
    let out = root.join("target/programs").join(format!("libomp-{name}"));
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let tmp = out.with_extension(format!("tmp{}", std::process::id()));
    // libatomic: the long double `omp atomic` of omp_locks_contended is a library call.
    let result = Command::new("clang")
        .args(["-O2", "-g", "-fopenmp", "-o"])
        .arg(&tmp)
        .arg(&source)
        .arg("-latomic")
        .output()
        .unwrap_or_else(|e| panic!("cannot run clang (.ci/run installs clang and libomp-dev): {e}"));
    assert!(result.status.success(), "building {}: {}", source.display(), String::from_utf8_lossy(&result.stderr));
    std::fs::rename(&tmp, &out).unwrap();
    out
}

fn native(prog: &Path, threads: &str) -> Outcome {
    let mut cmd = Command::new(prog);
    cmd.env("OMP_NUM_THREADS", threads);
    run(cmd, None)
}

fn hrt(cpus: &str, prog: &Path, threads: &str) -> Outcome {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    cmd.args(["run", "-v", "--omp", "auto", "--cpus", cpus, "--"]).arg(prog);
    cmd.env("OMP_NUM_THREADS", threads);
    run(cmd, None)
}

/// Contended locks and criticals (libomp's queuing lock hands over in arrival order), and the
/// constructs of omp_kernel, on as many vCPUs as the host has CPUs and on 2 more: the same
/// output as natively, and only the second packs the threads.
#[test]
fn libomp_programs_compute_what_they_do_natively_on_more_vcpus_than_host_cpus() {
    let host = std::thread::available_parallelism().map_or(2, |n| n.get());
    for name in ["omp_locks_contended", "omp_kernel"] {
        let prog = build(name);
        for (cpus, packed) in [(host, false), (host + 2, true)] {
            let cpus = cpus.to_string();
            for threads in [cpus.as_str(), "3"] {
                let want = native(&prog, threads);
                assert!(want.stdout.contains("all checks passed"), "{name} natively:\n{}", want.stdout);
                let got = hrt(&cpus, &prog, threads);
                let what = format!("{name} (clang, libomp) --cpus {cpus}, OMP_NUM_THREADS={threads}");
                assert_same(&what, &want, &got);
                assert_eq!(got.stderr.contains(PACKED), packed, "{what}: -v says:\n{}", got.stderr);
                // `--omp auto` keeps the program on its own runtime, and says which.
                let own = "runs on its own OpenMP runtime, LLVM's libomp";
                assert!(got.stderr.contains(own), "{what}: -v does not name libomp:\n{}", got.stderr);
            }
        }
    }
}

/// Packed on as many vCPUs as the host has CPUs, libomp's threads see those vCPUs in their CPU
/// mask, as under a cpuset: libomp counts them as its CPUs (`omp_get_num_procs`, its default
/// team) and, with more threads than that, yields at every spin of its waits. The system still
/// has every vCPU online, and a thread bound to the last one runs there. Without packing (as many
/// vCPUs as host CPUs) the mask names every vCPU.
#[test]
fn packed_libomp_threads_see_the_packed_vcpus_in_their_mask() {
    let host = std::thread::available_parallelism().map_or(2, |n| n.get());
    let prog = build("omp_procs");
    for (cpus, sees) in [(host, host), (host + 2, host)] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
        cmd.args(["run", "--cpus", &cpus.to_string(), "--"]).arg(&prog);
        cmd.env_remove("OMP_NUM_THREADS");
        let got = run(cmd, None);
        let want = format!(
            "omp_get_num_procs: {sees}\nomp_get_max_threads: {sees}\nteam: {sees}\nsched_getaffinity: {sees}\nonline: {cpus}\n\
             bound to the last CPU: runs there yes, mask names it alone yes\n"
        );
        assert_eq!(got.stdout, want, "omp_procs (clang, libomp) --cpus {cpus}: stderr:\n{}", got.stderr);
        assert_eq!(got.code(), 0, "omp_procs --cpus {cpus}: stderr:\n{}", got.stderr);
    }
}
