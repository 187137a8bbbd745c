//! Running the hostile programs of tests/programs/hostile: each is one C file, built once with
//! `gcc -O1 -g -static -pthread` into target/programs/hostile-NAME, then run natively and under
//! `hrt run` so a test can compare what Linux does (exit status, errno, output) with what HRT
//! does. A run is killed (with its process group) after `HRT_TEST_TIME_LIMIT` seconds
//! (default 300) and reported as hung.

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("monitor/ has a parent").to_path_buf()
}

/// Builds tests/programs/hostile/NAME.c (once per test binary and source change) and returns the
/// executable's path. `extra` flags are appended (`-static-pie` instead of `-static`); they are part of the
/// output name so different builds of one source coexist.
pub fn build(name: &str, extra: &[&str]) -> PathBuf {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let root = repo_root();
    let source = root.join("tests/programs/hostile").join(format!("{name}.c"));
    let out_dir = root.join("target/programs");
    std::fs::create_dir_all(&out_dir).expect("creating target/programs");
    let suffix: String =
        extra.iter().map(|f| f.trim_start_matches('-').replace(['=', '/'], "_")).collect::<Vec<_>>().join("-");
    let out =
        out_dir.join(if suffix.is_empty() { format!("hostile-{name}") } else { format!("hostile-{name}-{suffix}") });
    // Fresh if newer than the source and every shared header beside it (an edited header
    // rebuilds the programs, since gcc finds `#include "x.h"` next to the source).
    let fresh = |o: &Path| -> bool {
        let (Ok(a), Ok(b)) = (std::fs::metadata(o), std::fs::metadata(&source)) else { return false };
        let built = a.modified().ok();
        built >= b.modified().ok() && newest_header(source.parent().expect("a source has a folder")) <= built
    };
    if !fresh(&out) {
        let tmp = out.with_extension("tmp");
        // `-static-pie` replaces `-static` (gcc refuses the two together).
        let link = if extra.contains(&"-static-pie") { "-static-pie" } else { "-static" };
        let result = Command::new("gcc")
            .args(["-O1", "-g", "-Wall", link, "-pthread"])
            .args(extra.iter().filter(|f| **f != "-static-pie"))
            .arg("-o")
            .arg(&tmp)
            .arg(&source)
            .output()
            .unwrap_or_else(|e| panic!("cannot run gcc: {e}"));
        assert!(result.status.success(), "building {}: {}", source.display(), String::from_utf8_lossy(&result.stderr));
        std::fs::rename(&tmp, &out).expect("renaming the built program");
    }
    out
}

/// The newest modification time of the `.h` files in `dir` (None if there are none).
fn newest_header(dir: &Path) -> Option<std::time::SystemTime> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "h"))
        .filter_map(|e| e.metadata().ok()?.modified().ok())
        .max()
}

/// What a finished (or killed) process left.
#[derive(Debug)]
pub struct Outcome {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub hung: bool,
}

impl Outcome {
    /// The exit status as a shell reports it: the code, or 128 + the signal.
    pub fn code(&self) -> i32 {
        self.status.code().unwrap_or_else(|| 128 + self.status.signal().unwrap_or(0))
    }
}

fn time_limit() -> Duration {
    let secs = std::env::var("HRT_TEST_TIME_LIMIT").ok().and_then(|s| s.parse().ok()).unwrap_or(300);
    Duration::from_secs(secs)
}

/// Spawns `cmd`, trying again while it fails with ETXTBSY: a file a test has just written
/// (a script) stays open for writing in the children other test threads fork at that moment,
/// until they exec, and exec of it fails meanwhile.
fn spawn_retrying_busy(cmd: &mut Command) -> std::process::Child {
    const ETXTBSY: i32 = 26;
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Ok(child) => return child,
            Err(e) if e.raw_os_error() == Some(ETXTBSY) && tries < 100 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("cannot run {cmd:?}: {e}"),
        }
    }
}

/// Runs `cmd` with `stdin` as its standard input (None: /dev/null); kills it after the limit.
pub fn run(cmd: Command, stdin: Option<&[u8]>) -> Outcome {
    let (status, stdout, stderr, hung) = run_bytes(cmd, stdin, time_limit());
    let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
    Outcome { status, stdout: text(stdout), stderr: text(stderr), hung }
}

/// Runs `cmd` in a process group of its own with `stdin` as its standard input (None:
/// /dev/null), and returns its status, stdout, stderr, and whether it was killed at `limit`.
/// The run ends when `cmd` has ended and its output pipes have closed: a process it left
/// behind holding them (a hung forked child) is killed at the limit too, rather than keeping
/// the test waiting for good (a stuck `hrt` child once held a CI run until its 90-minute
/// limit).
pub fn run_bytes(mut cmd: Command, stdin: Option<&[u8]>, limit: Duration) -> (ExitStatus, Vec<u8>, Vec<u8>, bool) {
    use std::os::unix::process::CommandExt;
    use std::sync::Arc;
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() });
    let mut child = spawn_retrying_busy(&mut cmd);
    let group = child.id() as i32;
    // A program that stops reading early closes the pipe: that is not an error here.
    let writer = stdin.map(|bytes| {
        let mut pipe = child.stdin.take().unwrap();
        let bytes = bytes.to_vec();
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        })
    });
    // Each reader appends to a buffer the test can take whenever it gives up waiting.
    let collect = |mut pipe: Box<dyn Read + Send>| {
        let buf = Arc::new(Mutex::new(Vec::new()));
        let to = buf.clone();
        let reader = std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n @ 1..) = pipe.read(&mut chunk) {
                to.lock().unwrap().extend_from_slice(&chunk[..n]);
            }
        });
        (reader, buf)
    };
    let stdout = collect(Box::new(child.stdout.take().unwrap()));
    let stderr = collect(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    let kill_group = || {
        // SAFETY: signals the process group this function made.
        unsafe { libc::kill(-group, libc::SIGKILL) };
    };
    let mut hung = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for a child") {
            break status;
        }
        if Instant::now() > deadline {
            hung = true;
            kill_group();
            break child.wait().expect("waiting for a killed child");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    while !(stdout.0.is_finished() && stderr.0.is_finished()) {
        if Instant::now() > deadline {
            if !hung {
                hung = true;
                kill_group();
            }
            // Killed: the pipes close at once, unless a process escaped the group.
            if Instant::now() > deadline + Duration::from_secs(10) {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    if let Some(writer) = writer.filter(|w| w.is_finished()) {
        let _ = writer.join();
    }
    let take = |buf: &Mutex<Vec<u8>>| std::mem::take(&mut *buf.lock().unwrap());
    (status, take(&stdout.1), take(&stderr.1), hung)
}

/// `PROG ARGS` natively.
pub fn native(prog: &Path, args: &[&str]) -> Outcome {
    let mut cmd = Command::new(prog);
    cmd.args(args);
    run(cmd, None)
}

/// `hrt run OPTIONS -- PROG ARGS` (add `--cpus N` to `options` as needed; the default is the
/// host's CPU count).
pub fn hrt(options: &[&str], prog: &Path, args: &[&str]) -> Outcome {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    cmd.arg("run").args(options).arg("--").arg(prog).args(args);
    run(cmd, None)
}

/// Builds `name` (tests/programs/hostile), runs it natively, where `natively` must hold of the
/// outcome (else the host, not hrt, is at fault), then under `hrt run --cpus 1`: both outcomes.
#[track_caller]
pub fn native_then_hrt(name: &str, args: &[&str], natively: impl Fn(&Outcome) -> bool) -> (Outcome, Outcome) {
    let prog = build(name, &[]);
    let linux = native(&prog, args);
    assert!(natively(&linux), "{name} natively: {linux:?}");
    let got = hrt(&["--cpus", "1"], &prog, args);
    (linux, got)
}

/// Runs `hrt` with `options` and arguments `args` (not only `run`), stdin from `stdin`.
pub fn hrt_cmd() -> Command {
    Command::new(env!("CARGO_BIN_EXE_hrt"))
}

/// Asserts that `hrt` behaved as Linux did: same exit status and stdout, not hung.
#[track_caller]
pub fn assert_same(what: &str, native: &Outcome, hrt: &Outcome) {
    assert!(!hrt.hung, "{what}: hrt hung (killed after the time limit); stderr:\n{}", hrt.stderr);
    assert!(
        native.code() == hrt.code() && native.stdout == hrt.stdout,
        "{what}: native and hrt differ\nnative: status {} stdout:\n{}\nstderr:\n{}\nhrt: status {} stdout:\n{}\nstderr:\n{}",
        native.code(),
        native.stdout,
        native.stderr,
        hrt.code(),
        hrt.stdout,
        hrt.stderr
    );
}

/// Runs `prog ARGS` under `hrt run --cpus 1` and `--cpus 2` and asserts each behaves as the
/// native run `linux` did (the label names the program in a failure).
#[allow(dead_code)] // not every test file uses it
#[track_caller]
pub fn assert_same_on_1_and_2_cpus(label: &str, prog: &Path, args: &[&str], linux: &Outcome) {
    for cpus in ["1", "2"] {
        let got = hrt(&["--cpus", cpus], prog, args);
        assert_same(&format!("{label} --cpus {cpus}"), linux, &got);
    }
}

/// Builds test program `name`, runs it natively (it must exit 0 and, when given, print
/// `marker`, so that a broken native run is never taken for the expected output), then under
/// `hrt run` with 1 and 2 vCPUs, and compares. Returns the native run.
#[allow(dead_code)] // not every test file uses it
pub fn passes_natively_and_same_on_1_and_2_cpus(name: &str, marker: Option<&str>) -> Outcome {
    passes_natively_and_same_on(name, marker, &["1", "2"])
}

/// Builds tests/programs/hostile/NAME.c static, static-PIE and dynamic; each natively, where
/// its output must contain `marker`, then under `hrt run --cpus 1` and `2`: the same outcome.
#[allow(dead_code)] // not every test file uses it
pub fn same_in_every_link_on_1_and_2_cpus(name: &str, marker: &str) {
    let source = repo_root().join("tests/programs/hostile").join(format!("{name}.c"));
    let dynamic = build_dynamic(&source, name, &[]);
    for prog in [build(name, &[]), build(name, &["-static-pie"]), dynamic] {
        let want = native(&prog, &[]);
        assert!(want.stdout.contains(marker), "natively: {want:?}");
        for cpus in ["1", "2"] {
            let out = hrt(&["--cpus", cpus], &prog, &[]);
            assert_same(&format!("{} at --cpus {cpus}", prog.display()), &want, &out);
        }
    }
}

/// `passes_natively_and_same_on_1_and_2_cpus` with the vCPU counts `cpus` (e.g. more than the
/// host's CPUs, where threads on different vCPUs race as they do natively on different CPUs).
#[allow(dead_code)] // not every test file uses it
pub fn passes_natively_and_same_on(name: &str, marker: Option<&str>, cpus: &[&str]) -> Outcome {
    passes_natively_and_same_with(name, marker, cpus, &[])
}

/// `passes_natively_and_same_on` with more `hrt run` options (`--mem 4G`, ...) after `--cpus N`.
#[allow(dead_code)] // not every test file uses it
pub fn passes_natively_and_same_with(name: &str, marker: Option<&str>, cpus: &[&str], options: &[&str]) -> Outcome {
    let prog = build(name, &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    if let Some(marker) = marker {
        assert!(linux.stdout.contains(marker), "natively: {}", linux.stdout);
    }
    for n in cpus {
        let args: Vec<&str> = ["--cpus", n].iter().chain(options).copied().collect();
        let got = hrt(&args, &prog, &[]);
        assert_same(&format!("{name} {}", args.join(" ")), &linux, &got);
    }
    linux
}

/// Builds a C file with the system's default linking (dynamic, PIE) into
/// target/programs/dyn-`out_name`: `gcc -O1 -g -pthread -o OUT SOURCE FLAGS` (libraries last). Rebuilt when the
/// source is newer.
#[allow(dead_code)] // only the dynamic-linking tests use it
pub fn build_dynamic(source: &Path, out_name: &str, flags: &[&str]) -> PathBuf {
    build_with("gcc", source, out_name, flags)
}

/// `build_dynamic` with another compiler driver (`mpicc`).
pub fn build_with(compiler: &str, source: &Path, out_name: &str, flags: &[&str]) -> PathBuf {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let out_dir = repo_root().join("target/programs");
    std::fs::create_dir_all(&out_dir).expect("creating target/programs");
    let out = out_dir.join(format!("dyn-{out_name}"));
    std::fs::create_dir_all(out.parent().expect("a file in target/programs")).expect("creating its directory");
    let fresh = match (std::fs::metadata(&out), std::fs::metadata(source)) {
        (Ok(a), Ok(b)) => a.modified().ok() >= b.modified().ok(),
        _ => false,
    };
    if !fresh {
        let tmp = out.with_extension("tmp");
        let result = Command::new(compiler)
            .args(["-O1", "-g", "-pthread", "-o"])
            .arg(&tmp)
            .arg(source)
            .args(flags)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
        assert!(result.status.success(), "building {}: {}", source.display(), String::from_utf8_lossy(&result.stderr));
        std::fs::rename(&tmp, &out).expect("renaming the built program");
    }
    out
}
