//! MPI under hrt: `mpirun -np 2 hrt run --cpus 1 PROG` against `mpirun -np 2 PROG`, with the
//! distribution's MPICH (Debian's `mpich` and `libmpich-dev`, which `.ci/run` installs): a
//! ping-pong with checked payloads (1 B to 1 MiB), collectives, MPI+OpenMP, and
//! process_vm_readv/writev between the ranks. Then shared memory between a program under hrt
//! and a native process (tests/programs/hostile/shared_mem.c):
//! a MAP_SHARED host file, a POSIX shm object, a System V segment. Every MPI test fails (never
//! passes silently) when MPICH is missing.

mod common;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::hostile::{assert_same, build, build_with, hrt, native, repo_root, run, Outcome};

/// MPICH's own name for `tool` (`mpicc.mpich`) where Debian's `mpich` package installed it:
/// `mpicc` and `mpirun` are alternatives that another MPI installed later (Open MPI, which
/// LAMMPS and GROMACS pull in) takes over, without its headers.
fn mpich(tool: &str) -> String {
    let own = format!("{tool}.mpich");
    if Path::new("/usr/bin").join(&own).exists() {
        own
    } else {
        tool.to_string()
    }
}

/// Fails with what to install when the MPI tools are missing.
fn require_mpich() {
    for tool in ["mpicc", "mpirun"].map(mpich) {
        let found = Command::new(&tool).arg("-h").output().is_ok();
        assert!(found, "{tool} is missing: install MPICH (apt-get install mpich libmpich-dev, as .ci/run does)");
    }
}

fn build_mpi(name: &str) -> PathBuf {
    require_mpich();
    let source = repo_root().join("tests/programs/mpi").join(format!("{name}.c"));
    build_with(&mpich("mpicc"), &source, name, &["-fopenmp"])
}

/// `mpirun -np 2 [hrt run --cpus 1 --] PROG ARGS` with `env` added, natively and under hrt
/// alike, with UCX choosing its transports as it pleases (before process_vm_readv worked under
/// hrt, UCX sent large messages over TCP, whose teardown hung MPI_Finalize about one run in
/// four: the ranks' TCP flush needs the other rank's progress, UCX issue 8738).
fn mpirun(under_hrt: bool, prog: &Path, args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let mut cmd = Command::new(mpich("mpirun"));
    cmd.args(["-np", "2"]);
    if under_hrt {
        cmd.arg(env!("CARGO_BIN_EXE_hrt")).args(["run", "--cpus", "1", "--"]);
    }
    cmd.arg(prog).args(args).envs(env.iter().copied());
    run(cmd, None)
}

/// Runs `name` natively and under hrt (2 ranks each) and compares status and stdout; `sort`:
/// compare stdout's lines sorted (ranks print their own lines, which mpirun may interleave).
fn same_under_hrt(name: &str, env: &[(&str, &str)], sort: bool) -> Outcome {
    let prog = build_mpi(name);
    let sorted = |mut o: Outcome| {
        if sort {
            let mut lines: Vec<&str> = o.stdout.lines().collect();
            lines.sort_unstable();
            o.stdout = lines.join("\n");
        }
        o
    };
    let linux = sorted(mpirun(false, &prog, &[], env));
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    let got = sorted(mpirun(true, &prog, &[], env));
    assert_same(name, &linux, &got);
    got
}

#[test]
fn ping_pong_of_checked_messages() {
    let got = same_under_hrt("mpi_pingpong", &[], false);
    assert!(got.stdout.contains("size 1048576: 5 rounds") && got.stdout.ends_with("mismatches: 0\n"), "{got:?}");
}

#[test]
fn collectives() {
    let got = same_under_hrt("mpi_collectives", &[], true);
    assert_eq!(got.stdout.lines().count(), 2, "{got:?}");
}

#[test]
fn hybrid_mpi_and_openmp() {
    let got = same_under_hrt("mpi_hybrid", &[("OMP_NUM_THREADS", "2")], false);
    assert!(got.stdout.contains("threads in all 4"), "{got:?}");
}

/// `hrt run --children hrt -- mpirun -np 2 PROG`: the process manager runs inside the VM and
/// execs each rank there, which gets UCX's proc-link mode off as a rank `hrt run` starts does
/// (`hrt_abi::mpi_env`; the ranks' MPI_Init failed: UCX opened /proc/<peer>/fd/N of the other
/// rank's `hrt`, which is refused).
#[test]
fn a_process_manager_inside_the_vm() {
    let prog = build_mpi("mpi_pingpong");
    let linux = mpirun(false, &prog, &[], &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    let mpirun = mpich("mpirun");
    cmd.args(["run", "--mem", "4G", "--children", "hrt", "--", &mpirun, "-np", "2"]).arg(&prog);
    let got = run(cmd, None);
    assert_same("mpirun under hrt run --children hrt", &linux, &got);
}

/// Cross-memory attach between the ranks' VMs (UCX's `cma` transport: without it UCX sends
/// large messages over TCP, whose teardown can hang MPI_Finalize), on the rank's own pid, and
/// Linux's errors.
#[test]
fn process_vm_readv_and_writev_between_ranks() {
    let got = same_under_hrt("mpi_cma", &[], true);
    assert_eq!(got.stdout.matches("mismatches 0").count(), 6, "{got:?}");
    // Linux's answers on the other rank's guarded pages (the native run gave the same).
    assert_eq!(got.stdout.matches("read the other's 3 guarded pages: 8192").count(), 2, "{got:?}");
    assert_eq!(got.stdout.matches("write the other's read-only page: -1 EFAULT").count(), 2, "{got:?}");
}

/// The channel's default spin counts the vCPUs of every rank on the host: two ranks of one
/// vCPU on two host CPUs leave none to spare (the short spin, and a woken polling thread is not
/// kept off its waker's CPU: the other core runs the other rank), one `hrt` of one vCPU does
/// (`-v` says which spin and why; no timing involved).
#[test]
fn the_default_spin_counts_all_local_ranks() {
    require_mpich();
    let hrt_bin = env!("CARGO_BIN_EXE_hrt");
    let two_cpus = |program: &str, args: &[&str]| {
        let mut cmd = Command::new("taskset");
        cmd.args(["-c", "0,1", program]).args(args);
        run(cmd, None)
    };
    let alone = two_cpus(hrt_bin, &["run", "-v", "--cpus", "1", "--", "/bin/true"]);
    assert_eq!(alone.code(), 0, "{alone:?}");
    let spin = "spins 1000 µs after the last request (2 host CPU(s) for 1 local MPI rank(s) of 1 vCPU(s))";
    assert!(alone.stderr.contains(spin), "{}", alone.stderr);
    let steer = "a vCPU that wakes it keeps it off its own host CPU";
    assert!(alone.stderr.contains(steer), "{}", alone.stderr);
    let ranks = two_cpus(&mpich("mpirun"), &["-np", "2", hrt_bin, "run", "-v", "--cpus", "1", "--", "/bin/true"]);
    assert_eq!(ranks.code(), 0, "{ranks:?}");
    let spin = "spins 50 µs after the last request (2 host CPU(s) for 2 local MPI rank(s) of 1 vCPU(s))";
    assert_eq!(ranks.stderr.matches(spin).count(), 2, "{}", ranks.stderr);
    assert!(!ranks.stderr.contains(steer), "{}", ranks.stderr);
}

/// Role "a" of shared_mem.c natively or under hrt, role "b" natively beside it.
fn meet(prog: &Path, kind: &str, name: &str, under_hrt: bool) -> Outcome {
    let mut peer = Command::new(prog);
    peer.args(["b", kind, name]);
    let peer = std::thread::spawn(move || run(peer, None));
    let a = if under_hrt { hrt(&["--cpus", "1"], prog, &["a", kind, name]) } else { native(prog, &["a", kind, name]) };
    let b = peer.join().expect("the native peer");
    assert_eq!(b.code(), 0, "the native peer (with a under hrt: {under_hrt}): {b:?}\na: {a:?}");
    a
}

/// The host file the "file" case meets in: 8 KiB, the host's text at offset 128.
fn fresh_meeting_file(path: &Path) {
    let mut bytes = vec![0u8; 8192];
    bytes[128..147].copy_from_slice(b"hello from the host");
    std::fs::write(path, bytes).expect("writing the meeting file");
}

fn shared_with_a_native_process(kind: &str, name: &str) {
    let prog = build("shared_mem", &[]);
    let file = kind == "file";
    if file {
        fresh_meeting_file(Path::new(name));
    }
    let linux = meet(&prog, kind, name, false);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(linux.stdout.contains("a's message kept"), "natively: {linux:?}");
    if file {
        fresh_meeting_file(Path::new(name));
    }
    let got = meet(&prog, kind, name, true);
    assert_same(&format!("shared_mem {kind}"), &linux, &got);
    if file {
        // a's stores reached the file itself.
        let bytes = std::fs::read(name).expect("reading the meeting file");
        assert!(bytes.windows(12).any(|w| w == b"hello from a"), "the file lacks a's message");
        let _ = std::fs::remove_file(name);
    }
}

#[test]
fn map_shared_host_file() {
    let path = std::env::temp_dir().join(format!("hrt-shared-mem-{}", std::process::id()));
    shared_with_a_native_process("file", path.to_str().expect("a UTF-8 temporary path"));
}

#[test]
fn posix_shm_object() {
    shared_with_a_native_process("shm", &format!("/hrt-shared-mem-{}", std::process::id()));
}

#[test]
fn system_v_segment() {
    let key = format!("{:#x}", 0x4852_0000u32 | (std::process::id() & 0xffff));
    shared_with_a_native_process("sysv", &key);
}
