//! The C programs of tests/programs, run natively and under `hrt run --cpus N` for N in 1, 2, 4
//! with OMP_NUM_THREADS=N: stdout and exit status must match exactly, and stderr too where it is
//! deterministic. The crash programs (segfault, abort, divzero) die by a signal natively; under
//! hrt they must exit with 128+signal and name the signal on stderr, as a shell would.
//!
//! `tests/programs/build.sh` builds every program once per test binary (gcc `-static` and
//! `-static-pie`, musl-gcc where installed) into target/programs/. One #[test] per program loops
//! over its variants, vCPU counts and inputs and reports every mismatch at the end.
//!
//! Each hrt run boots a VM whose vCPUs are host threads; `HRT_TEST_VMS` sets how many VMs may run
//! at once (default: a quarter of the host's CPUs, at least one). A run that takes longer than
//! `HRT_TEST_TIME_LIMIT` seconds (default 900) is taken to be hung and killed; no test depends
//! on how long anything takes.

mod common;
use common::elf_header;

use std::fmt::Write as _;

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// vCPU counts; each hrt run gets OMP_NUM_THREADS equal to its vCPUs, as does the native run
/// it is compared with.
const CPUS: [u32; 3] = [1, 2, 4];

// ---------------------------------------------------------------------------------------------
// Building the programs

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("monitor/ has a parent").to_path_buf()
}

/// Builds the programs (once per test binary) and returns the directory that holds them.
fn programs() -> &'static Path {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let root = repo_root();
        let out_dir = root.join("target").join("programs");
        let script = root.join("tests").join("programs").join("build.sh");
        let out = Command::new("bash")
            .arg(&script)
            .env("HRT_PROGRAMS_OUT", &out_dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} failed ({}):\n{}{}",
                script.display(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(out_dir)
    });
    match built {
        Ok(dir) => dir,
        Err(e) => panic!("building the test programs: {e}"),
    }
}

/// The built variants of program `name`: (variant, absolute path). `static` and `pie` always,
/// `musl` when build.sh made one.
fn variants(name: &str) -> Vec<(&'static str, PathBuf)> {
    let dir = programs();
    let mut found = Vec::new();
    for variant in ["static", "pie", "musl"] {
        let path = dir.join(format!("{name}-{variant}"));
        if path.exists() {
            found.push((variant, path));
        } else {
            assert_ne!(variant, "static", "{} was not built", path.display());
            assert_ne!(variant, "pie", "{} was not built", path.display());
        }
    }
    found
}

// ---------------------------------------------------------------------------------------------
// Running a command

/// What a finished (or killed) process left.
struct Outcome {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    /// Killed after the time limit.
    hung: bool,
    /// Wall-clock time, for the summary line only.
    elapsed: Duration,
}

impl Outcome {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    /// "exit 3", "signal 11", or "killed after the time limit".
    fn describe(&self) -> String {
        if self.hung {
            "killed after the time limit (hung?)".to_string()
        } else if let Some(code) = self.status.code() {
            format!("exit {code}")
        } else if let Some(signal) = self.status.signal() {
            format!("signal {signal}")
        } else {
            format!("{}", self.status)
        }
    }
}

fn time_limit() -> Duration {
    let secs = std::env::var("HRT_TEST_TIME_LIMIT").ok().and_then(|s| s.parse().ok()).unwrap_or(900);
    Duration::from_secs(secs)
}

/// Runs `cmd` with `stdin` as its standard input (None: /dev/null), collecting stdout and stderr;
/// kills it (and what it left holding its output) after the time limit.
fn run(cmd: Command, stdin: Option<&[u8]>) -> Outcome {
    let started = Instant::now();
    let (status, stdout, stderr, hung) = common::hostile::run_bytes(cmd, stdin, time_limit());
    Outcome { status, stdout, stderr, hung, elapsed: started.elapsed() }
}

/// A counting semaphore that bounds how many VMs run at once.
struct VmSlots {
    free: Mutex<u32>,
    freed: Condvar,
}

struct VmSlot(&'static VmSlots);

impl Drop for VmSlot {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

fn vm_slot() -> VmSlot {
    static SLOTS: OnceLock<VmSlots> = OnceLock::new();
    let slots = SLOTS.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        let n = std::env::var("HRT_TEST_VMS").ok().and_then(|s| s.parse().ok()).unwrap_or((cpus / 4).max(1));
        VmSlots { free: Mutex::new(n.max(1)), freed: Condvar::new() }
    });
    let mut free = slots.free.lock().unwrap_or_else(|e| e.into_inner());
    while *free == 0 {
        free = slots.freed.wait(free).unwrap_or_else(|e| e.into_inner());
    }
    *free -= 1;
    VmSlot(slots)
}

/// `hrt run [extra] --cpus N -- PROG ARGS`, one VM at a time per slot.
fn run_hrt(cpus: u32, hrt_options: &[&str], prog: &Path, args: &[String], env: &Env, stdin: Option<&[u8]>) -> Outcome {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    cmd.arg("run").args(hrt_options).arg("--cpus").arg(cpus.to_string()).arg("--").arg(prog).args(args);
    env.apply(&mut cmd, cpus);
    let _slot = vm_slot();
    run(cmd, stdin)
}

/// PROG ARGS natively; with `env.clear`, in an empty environment (what `hrt run --clear-env`
/// gives the program).
fn run_native(cpus: u32, prog: &Path, args: &[String], env: &Env, stdin: Option<&[u8]>) -> Outcome {
    let mut cmd = Command::new(prog);
    cmd.args(args);
    if env.clear {
        cmd.env_clear();
    } else {
        env.apply(&mut cmd, cpus);
    }
    run(cmd, stdin)
}

/// The environment of both runs: the test's own plus `vars` and OMP_NUM_THREADS, or (with
/// `clear`) nothing at all natively and `hrt run --clear-env` under hrt.
#[derive(Clone, Default)]
struct Env {
    vars: Vec<(String, String)>,
    clear: bool,
}

impl Env {
    fn apply(&self, cmd: &mut Command, cpus: u32) {
        if !self.clear {
            cmd.env("OMP_NUM_THREADS", cpus.to_string());
        }
        cmd.envs(self.vars.iter().map(|(k, v)| (k, v)));
    }
}

// ---------------------------------------------------------------------------------------------
// Comparing

/// A line diff of `native` against `hrt` (longest common subsequence), showing changed lines
/// with up to two lines of context: `-` native only, `+` hrt only.
fn diff(native: &str, hrt: &str) -> String {
    const MAX_LINES: usize = 2000;
    let a: Vec<&str> = native.lines().take(MAX_LINES).collect();
    let b: Vec<&str> = hrt.lines().take(MAX_LINES).collect();
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push((' ', a[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', a[i]));
            i += 1;
        } else {
            ops.push(('+', b[j]));
            j += 1;
        }
    }
    let changed: Vec<usize> = ops.iter().enumerate().filter(|(_, op)| op.0 != ' ').map(|(k, _)| k).collect();
    let mut out = String::new();
    let mut shown = 0;
    let mut last_shown: Option<usize> = None;
    for (k, (tag, line)) in ops.iter().enumerate() {
        let near = changed.iter().any(|&c| c.abs_diff(k) <= 2);
        if !near {
            continue;
        }
        if last_shown.is_some_and(|l| k > l + 1) {
            out.push_str("    ...\n");
        }
        let _ = writeln!(out, "    {tag} {line}");
        last_shown = Some(k);
        shown += 1;
        if shown >= 60 {
            out.push_str("    ... (more differences)\n");
            break;
        }
    }
    if !native.is_empty() && !native.ends_with('\n') || !hrt.is_empty() && !hrt.ends_with('\n') {
        let _ = writeln!(
            out,
            "    (last line without newline: native {}, hrt {})",
            !native.ends_with('\n'),
            !hrt.ends_with('\n')
        );
    }
    out
}

/// The last `n` lines of `text`, indented, for failure messages.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    let mut out = String::new();
    if start > 0 {
        let _ = writeln!(out, "    ... ({start} earlier lines)");
    }
    for line in &lines[start..] {
        let _ = writeln!(out, "    | {line}");
    }
    if lines.is_empty() {
        out.push_str("    (empty)\n");
    }
    out
}

/// Mismatches found by one test, reported together at the end.
#[derive(Default)]
struct Report {
    runs: u32,
    /// Total and longest wall-clock time of the hrt runs (reported, never asserted).
    hrt_time: Duration,
    longest: Duration,
    failures: Vec<String>,
}

impl Report {
    fn fail(&mut self, what: &str, message: String) {
        self.failures.push(format!("{what}: {message}"));
    }

    fn finish(self, program: &str) {
        if self.failures.is_empty() {
            eprintln!(
                "{program}: {} hrt runs matched the native runs ({:.1} s in hrt, longest run {:.1} s)",
                self.runs,
                self.hrt_time.as_secs_f64(),
                self.longest.as_secs_f64()
            );
            return;
        }
        let mut message = format!("{program}: {} of {} runs did not match:\n", self.failures.len(), self.runs);
        for failure in &self.failures {
            message.push_str("\n- ");
            message.push_str(failure);
            if !failure.ends_with('\n') {
                message.push('\n');
            }
        }
        panic!("{message}");
    }
}

/// How a program ends, natively and under hrt.
#[derive(Clone, Copy)]
enum Ending {
    /// Exits with this status both ways.
    Exit(i32),
    /// Killed by this signal natively; under hrt exits with 128+signal and prints the message.
    Signal(i32, &'static str),
}

/// One input to a program.
#[derive(Clone, Default)]
struct Case {
    label: String,
    args: Vec<String>,
    env: Env,
    stdin: Option<Vec<u8>>,
    /// Give the program a fresh empty directory as its last argument, and compare the files it
    /// leaves there.
    temp_dir: bool,
    /// The expected ending; None means exit 0.
    ending: Option<Ending>,
}

impl Case {
    fn new(label: &str) -> Case {
        Case { label: label.to_string(), ..Case::default() }
    }

    fn args(mut self, args: &[&str]) -> Case {
        self.args = args.iter().map(|s| s.to_string()).collect();
        self
    }

    fn ending(mut self, ending: Ending) -> Case {
        self.ending = Some(ending);
        self
    }
}

/// What to compare besides stdout and the exit status.
#[derive(Clone, Copy, Default)]
struct Checks {
    /// Compare stderr byte for byte.
    stderr: bool,
    /// The program prints `omp_get_num_procs: N`: natively the host's CPUs, under hrt the vCPUs.
    num_procs_line: bool,
}

/// A fresh directory for one run, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("hrt-run-test-{}-{tag}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        TempDir(path)
    }

    /// The sorted names in the directory with each regular file's contents.
    fn contents(&self) -> String {
        let mut entries: Vec<(String, PathBuf)> = std::fs::read_dir(&self.0)
            .map(|rd| {
                rd.filter_map(|e| e.ok()).map(|e| (e.file_name().to_string_lossy().into_owned(), e.path())).collect()
            })
            .unwrap_or_default();
        entries.sort();
        let mut out = String::new();
        for (name, path) in entries {
            match std::fs::read(&path) {
                Ok(bytes) => {
                    let _ = writeln!(out, "file {name}: {} bytes", bytes.len());
                    out.push_str(&String::from_utf8_lossy(&bytes));
                    out.push('\n');
                }
                Err(_) => {
                    let _ = writeln!(out, "entry {name} (not a readable file)");
                }
            }
        }
        out
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Drops the `omp_get_num_procs:` line from stdout; returns the rest and the line's value.
fn split_num_procs(stdout: &str) -> (String, Option<String>) {
    let mut rest = String::new();
    let mut value = None;
    for line in stdout.split_inclusive('\n') {
        if let Some(v) = line.strip_prefix("omp_get_num_procs: ") {
            value = Some(v.trim_end().to_string());
        } else {
            rest.push_str(line);
        }
    }
    (rest, value)
}

/// Runs every variant of `name` with every case, natively and under hrt with 1, 2 and 4 vCPUs,
/// and panics with every mismatch.
/// `check_program` of a program run without arguments or input, stderr compared too.
fn check_alone(name: &str) {
    check_program(name, &[Case::new("no arguments")], Checks { stderr: true, ..Checks::default() });
}

fn check_program(name: &str, cases: &[Case], checks: Checks) {
    check_program_with(name, cases, checks, &[], &CPUS);
}

fn check_program_with(name: &str, cases: &[Case], checks: Checks, hrt_options: &[&str], cpus: &[u32]) {
    let mut report = Report::default();
    for (variant, prog) in variants(name) {
        for &n in cpus {
            for case in cases {
                report.runs += 1;
                let what = format!(
                    "{name}-{variant} [{}] `hrt run{}{} --cpus {n}` OMP_NUM_THREADS={n}",
                    case.label,
                    if hrt_options.is_empty() { "" } else { " " },
                    hrt_options.join(" ")
                );
                check_case(&mut report, &what, &prog, case, checks, hrt_options, n);
            }
        }
    }
    report.finish(name);
}

fn check_case(report: &mut Report, what: &str, prog: &Path, case: &Case, checks: Checks, options: &[&str], n: u32) {
    let mut options: Vec<&str> = options.to_vec();
    if case.env.clear {
        options.push("--clear-env");
    }
    let stdin = case.stdin.as_deref();

    let native_dir = case.temp_dir.then(|| TempDir::new("native"));
    let mut args = case.args.clone();
    if let Some(dir) = &native_dir {
        args.push(dir.0.to_string_lossy().into_owned());
    }
    let native = run_native(n, prog, &args, &case.env, stdin);
    let native_files = native_dir.as_ref().map(TempDir::contents);
    drop(native_dir);

    let hrt_dir = case.temp_dir.then(|| TempDir::new("hrt"));
    let mut args = case.args.clone();
    if let Some(dir) = &hrt_dir {
        args.push(dir.0.to_string_lossy().into_owned());
    }
    let hrt = run_hrt(n, &options, prog, &args, &case.env, stdin);
    report.hrt_time += hrt.elapsed;
    report.longest = report.longest.max(hrt.elapsed);
    let hrt_files = hrt_dir.as_ref().map(TempDir::contents);
    drop(hrt_dir);

    let mut problems = String::new();
    // The native run is the reference: it must end as the test expects, or the test program
    // itself is broken.
    let ending = case.ending.unwrap_or(Ending::Exit(0));
    let native_ok = match ending {
        Ending::Exit(code) => native.status.code() == Some(code),
        Ending::Signal(signal, _) => native.status.signal() == Some(signal),
    };
    if !native_ok || native.hung {
        let _ = writeln!(
            problems,
            "the NATIVE run ended with {} (expected {}); its stderr:\n{}",
            native.describe(),
            match ending {
                Ending::Exit(c) => format!("exit {c}"),
                Ending::Signal(s, _) => format!("signal {s}"),
            },
            tail(&native.stderr(), 10)
        );
    }

    // Exit status.
    let want_code = match ending {
        Ending::Exit(_) => native.status.code(),
        Ending::Signal(signal, _) => Some(128 + signal),
    };
    if hrt.hung || hrt.status.code() != want_code {
        let _ = writeln!(
            problems,
            "exit status: native {} but hrt {} (expected exit {})",
            native.describe(),
            hrt.describe(),
            want_code.map_or("?".to_string(), |c| c.to_string())
        );
    }

    // Stdout.
    let (native_out, hrt_out) = if checks.num_procs_line {
        let (native_rest, native_procs) = split_num_procs(&native.stdout());
        let (hrt_rest, hrt_procs) = split_num_procs(&hrt.stdout());
        if native_procs.is_none() {
            let _ = writeln!(problems, "the native run printed no `omp_get_num_procs:` line");
        }
        if hrt_procs.as_deref() != Some(n.to_string().as_str()) {
            let _ = writeln!(
                problems,
                "omp_get_num_procs under hrt --cpus {n} is {} (native: {})",
                hrt_procs.as_deref().unwrap_or("not printed"),
                native_procs.as_deref().unwrap_or("not printed")
            );
        }
        (native_rest, hrt_rest)
    } else {
        (native.stdout(), hrt.stdout())
    };
    if native_out != hrt_out {
        let _ = write!(problems, "stdout differs (- native, + hrt):\n{}", diff(&native_out, &hrt_out));
    }

    // Stderr.
    match ending {
        Ending::Signal(_, message) => {
            if !hrt.stderr().contains(message) {
                let _ = writeln!(problems, "hrt's stderr does not contain `{message}`");
            }
        }
        Ending::Exit(_) => {
            if checks.stderr && native.stderr != hrt.stderr {
                let _ =
                    write!(problems, "stderr differs (- native, + hrt):\n{}", diff(&native.stderr(), &hrt.stderr()));
            }
        }
    }

    // Files left behind.
    if native_files != hrt_files {
        let _ = write!(
            problems,
            "files left in the directory differ (- native, + hrt):\n{}",
            diff(native_files.as_deref().unwrap_or(""), hrt_files.as_deref().unwrap_or(""))
        );
    }

    if !problems.is_empty() {
        let _ =
            write!(problems, "hrt ran {:.1} s; its stderr:\n{}", hrt.elapsed.as_secs_f64(), tail(&hrt.stderr(), 15));
        report.fail(what, format!("\n  {}", problems.trim_end().replace('\n', "\n  ")));
    }
}

// ---------------------------------------------------------------------------------------------
// The programs

#[test]
fn hello() {
    check_alone("hello");
}

#[test]
fn args_env() {
    let vars = [
        ("HRT_TEST_VAR", "value of HRT_TEST_VAR"),
        ("HRT_TEST_EMPTY", ""),
        ("HRT_TEST_SPACES", "  two  spaces = and an equals sign "),
    ];
    let mut with_env = Case::new("arguments and environment").args(&[
        "one",
        "two words",
        "",
        "--cpus",
        "-x",
        "ünïcødé ✓",
        "tab\there",
    ]);
    with_env.env.vars = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let mut cleared = Case::new("--clear-env").args(&["only"]);
    cleared.env.clear = true;
    check_program(
        "args_env",
        &[Case::new("no arguments"), with_env, cleared],
        Checks { stderr: true, ..Checks::default() },
    );
}

#[test]
fn exit_code() {
    let cases: Vec<Case> = [
        ("0", "return", 0),
        ("1", "return", 1),
        ("42", "exit", 42),
        ("255", "_exit", 255),
        ("256", "exit", 0),
        ("-1", "return", 255),
    ]
    .iter()
    .map(|&(status, how, code)| {
        Case::new(&format!("{status} by {how}")).args(&[status, how]).ending(Ending::Exit(code))
    })
    .collect();
    check_program("exit_code", &cases, Checks { stderr: true, ..Checks::default() });
}

/// /proc/meminfo describes the program's memory as sysinfo does (the VM's under hrt).
#[test]
fn meminfo() {
    check_alone("meminfo");
}

/// `hrt run`'s default memory (128 GiB) is a reservation larger than this host's RAM, but
/// the program is told at most the host's memory (sysinfo, /proc/meminfo), so that a program
/// that sizes itself by it does not ask the host for more than it has.
#[test]
fn the_memory_a_program_is_told_of_is_at_most_the_hosts() {
    let host = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kb = host.lines().find_map(|l| l.strip_prefix("MemTotal:")).unwrap().trim().trim_end_matches(" kB").to_string();
    check_program("meminfo", &[Case::new("with the host's MemTotal").args(&[&kb])], Checks::default());
}

#[test]
fn files() {
    let in_dir = Case { temp_dir: true, ..Case::new("in a fresh directory") };
    check_program("files", &[in_dir, Case::new("mkdtemp under /tmp")], Checks { stderr: true, ..Checks::default() });
}

/// Deterministic bytes: text lines, then every byte value, then pseudo-random bytes.
fn stdin_bytes(len: usize) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(len);
    let mut k = 0u32;
    while bytes.len() < len / 4 {
        bytes.extend_from_slice(format!("line {k}: the quick brown fox jumps over the lazy dog\n").as_bytes());
        k += 1;
    }
    bytes.extend(0..=255u8);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    while bytes.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bytes.push((x >> 32) as u8);
    }
    bytes.truncate(len);
    bytes
}

#[test]
fn stdin_pipe() {
    let big = Case { stdin: Some(stdin_bytes(3 << 20)), ..Case::new("3 MiB on a pipe") };
    let small = Case { stdin: Some(b"one line without a newline".to_vec()), ..Case::new("26 bytes on a pipe") };
    let empty = Case { stdin: Some(Vec::new()), ..Case::new("empty pipe") };
    let null = Case::new("stdin /dev/null");
    check_program("stdin_pipe", &[big, small, empty, null], Checks { stderr: true, ..Checks::default() });
}

#[test]
fn malloc_stress() {
    check_alone("malloc_stress");
}

#[test]
fn pthreads() {
    check_alone("pthreads");
}

/// Pinning moves the thread (two spinning threads pinned apart must really run apart).
#[test]
fn affinity() {
    check_alone("affinity");
}

/// Another thread's mask (pthread_create with an affinity attribute, pthread_setaffinity_np of
/// a spinning and of a blocked thread) moves that thread, as on Linux.
#[test]
fn affinity_of_other_threads() {
    check_alone("affinity_others");
}

/// PR_SET_NAME names the calling thread only; new threads take their creator's name.
#[test]
fn thread_names() {
    check_alone("thread_names");
}

/// /proc/self/task lists the program's threads (it was EACCES: the monitor's own lists its
/// threads), and a thread's directory opens.
#[test]
fn proc_self_task_lists_the_programs_threads() {
    check_alone("proc_task");
}

/// vmsplice into and out of a pipe, nonblocking, and on a file (it was ENOSYS: a program that
/// then read the pipe waited for good).
#[test]
fn vmsplice_as_on_linux() {
    check_alone("vmsplice");
}

/// On the default runtime (`--omp auto`: the kernel's, the program being a static gcc build).
#[test]
fn openmp() {
    check_program("openmp", &[Case::new("no arguments")], Checks { stderr: true, num_procs_line: true });
}

/// The same program on its own libgomp, on the kernel's Linux system calls.
#[test]
fn openmp_on_its_own_libgomp() {
    let checks = Checks { stderr: true, num_procs_line: true };
    check_program_with("openmp", &[Case::new("no arguments")], checks, &["--omp", "libgomp"], &CPUS);
}

#[test]
fn bss_1g() {
    check_alone("bss_1g");
}

/// Every interface that reports CPUs (sched_getaffinity, sysconf, get_nprocs) says N under
/// `hrt run --cpus N`; natively they report the host's CPUs, so only hrt's output is checked.
#[test]
fn cpu_count() {
    let mut report = Report::default();
    for (variant, prog) in variants("cpus") {
        let native = run_native(1, &prog, &[], &Env::default(), None);
        assert_eq!(native.status.code(), Some(0), "cpus-{variant} fails natively: {}", native.stderr());
        let names: Vec<String> =
            native.stdout().lines().filter_map(|l| l.split_once(": ").map(|(name, _)| name.to_string())).collect();
        assert!(names.len() >= 3, "cpus-{variant} printed too little natively:\n{}", native.stdout());
        for n in CPUS {
            report.runs += 1;
            let hrt = run_hrt(n, &[], &prog, &[], &Env::default(), None);
            report.hrt_time += hrt.elapsed;
            report.longest = report.longest.max(hrt.elapsed);
            let want: String = names.iter().map(|name| format!("{name}: {n}\n")).collect();
            if hrt.hung || hrt.status.code() != Some(0) || hrt.stdout() != want {
                report.fail(
                    &format!("cpus-{variant} `hrt run --cpus {n}`"),
                    format!(
                        "\n  ended with {}; stdout (- expected, + hrt):\n{}  hrt's stderr:\n{}",
                        hrt.describe(),
                        diff(&want, &hrt.stdout()),
                        tail(&hrt.stderr(), 10)
                    ),
                );
            }
        }
    }
    report.finish("cpus");
}

/// ENOSYS may come with a trace line on hrt's stderr, so only stdout and the status count.
#[test]
fn enosys() {
    check_program("enosys", &[Case::new("no arguments")], Checks::default());
}

#[test]
fn segfault() {
    let case = Case::new("write to 0x10").ending(Ending::Signal(11, "Segmentation fault"));
    check_program("segfault", &[case], Checks::default());
}

#[test]
fn abort() {
    let case = Case::new("abort()").ending(Ending::Signal(6, "Aborted"));
    check_program("abort", &[case], Checks::default());
}

/// A death by a real-time signal is reported in a shell's words (it was "Killed by a signal").
#[test]
fn real_time_signal_deaths() {
    let cases = [
        Case::new("SIGRTMIN+1").args(&["35"]).ending(Ending::Signal(35, "Real-time signal 1")),
        Case::new("SIGRTMAX").args(&["64"]).ending(Ending::Signal(64, "Real-time signal 30")),
    ];
    check_program("raise_signal", &cases, Checks::default());
}

#[test]
fn divzero() {
    let case = Case::new("42 / 0").ending(Ending::Signal(8, "Floating point exception"));
    check_program("divzero", &[case], Checks::default());
}

/// The program in ring 0 (the hybrid-runtime path, `--app-ring 0`; emulated and slow on PVM
/// hosts), one vCPU: hello, exit codes, the faults, and the red zone under timer interrupts, with
/// `bare` (no libc: the only kind of program PVM's ring-0 emulator can run, it lacks SSE) in both
/// rings. libc programs run in ring 0 where ring 0 is native; on PVM hosts they must stop with
/// one clear line naming the instruction.
#[test]
fn app_ring_0() {
    let mut report = Report::default();
    let bare = programs().join("bare-static");
    let runs: Vec<(Case, Checks, &[&str])> = vec![
        (Case::new("hello").args(&["hello"]), Checks { stderr: true, ..Checks::default() }, &[]),
        (Case::new("exit 42").args(&["exit", "42"]).ending(Ending::Exit(42)), Checks::default(), &[]),
        (Case::new("segv").args(&["segv"]).ending(Ending::Signal(11, "Segmentation fault")), Checks::default(), &[]),
        (Case::new("ud2").args(&["ud"]).ending(Ending::Signal(4, "Illegal instruction")), Checks::default(), &[]),
        (
            Case::new("divide by zero").args(&["div"]).ending(Ending::Signal(8, "Floating point exception")),
            Checks::default(),
            &[],
        ),
        // Preemption every 100 us interrupts the program while its red zone is live.
        (Case::new("red zone").args(&["redzone", "2000"]), Checks::default(), &["--preempt", "100"]),
    ];
    for ring in ["0", "3"] {
        for (case, checks, extra) in &runs {
            let mut hrt_args = vec!["--app-ring", ring];
            // Only ring 0 shares the program's stack with traps. (In ring 3 on a PVM host, where
            // each emulated timer interrupt takes longer than 100 us, the program would starve.)
            if ring == "0" {
                hrt_args.extend_from_slice(extra);
            }
            report.runs += 1;
            let what = format!("bare-static [{}] `hrt run {} --cpus 1`", case.label, hrt_args.join(" "));
            check_case(&mut report, &what, &bare, case, *checks, &hrt_args, 1);
        }
    }
    let hello = programs().join("hello-static");
    let hello = hello.to_str().expect("UTF-8 path");
    if std::path::Path::new("/sys/module/kvm_pvm").exists() {
        assert_refused(&["--app-ring", "0", "--", hello], &["cannot run in guest ring 0", "--app-ring 3"]);
    } else {
        report.runs += 1;
        let case = Case::new("no arguments");
        let what = "hello-static `hrt run --app-ring 0 --cpus 1`".to_string();
        check_case(
            &mut report,
            &what,
            Path::new(hello),
            &case,
            Checks { stderr: true, ..Checks::default() },
            &["--app-ring", "0"],
            1,
        );
    }
    report.finish("app_ring_0");
}

// ---------------------------------------------------------------------------------------------
// Programs hrt refuses

/// Asserts that `hrt run ARGS` fails with exactly one stderr line `hrt: ...` that contains every
/// one of `facts`, and prints nothing on stdout.
fn assert_refused(args: &[&str], facts: &[&str]) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_hrt"));
    cmd.arg("run").args(args);
    let out = run(cmd, None);
    let stderr = out.stderr();
    assert!(
        !out.hung && matches!(out.status.code(), Some(c) if c != 0),
        "`hrt run {args:?}` ended with {}; stderr:\n{stderr}",
        out.describe()
    );
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "`hrt run {args:?}`: stderr is not one line:\n{stderr}");
    assert!(lines[0].starts_with("hrt: "), "`hrt run {args:?}`: the error does not start with `hrt: `: {}", lines[0]);
    for fact in facts {
        assert!(lines[0].contains(fact), "`hrt run {args:?}`: the error does not mention `{fact}`: {}", lines[0]);
    }
    assert!(out.stdout.is_empty(), "`hrt run {args:?}` printed to stdout:\n{}", out.stdout());
}

/// A file in a fresh directory, removed when dropped.
struct TempFile {
    _dir: TempDir,
    path: PathBuf,
}

impl TempFile {
    fn new(name: &str, bytes: &[u8]) -> TempFile {
        let dir = TempDir::new(name);
        let path = dir.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        TempFile { _dir: dir, path }
    }

    fn path(&self) -> &str {
        self.path.to_str().unwrap()
    }
}

#[test]
fn runs_dynamically_linked() {
    // Once refused; now hrt loads its interpreter (more cases in tests/dynamic.rs).
    let prog = programs().join("hello-dyn");
    let native = run_native(1, &prog, &[], &Env::default(), None);
    let hrt = run_hrt(1, &[], &prog, &[], &Env::default(), None);
    assert_eq!(native.status.code(), Some(0), "hello-dyn does not run natively: {}", native.stderr());
    assert_eq!((hrt.status.code(), hrt.stdout()), (Some(0), native.stdout()), "hrt: {}", hrt.stderr());
}

#[test]
fn refuses_missing_program() {
    assert_refused(&["--", "/nonexistent/hrt-test-program"], &["/nonexistent/hrt-test-program"]);
}

#[test]
fn refuses_non_elf() {
    // A binary that is no ELF (a NUL in its first line). Scripts run their interpreter, and
    // text without `#!` runs with /bin/sh, as execvp runs it: tests/scripts.rs.
    let binary = TempFile::new("binary", b"\x01\x02\x00 no program\n");
    assert_refused(&["--", binary.path()], &[binary.path()]);
}

#[test]
fn refuses_elf32() {
    let file = TempFile::new("elf32", &elf_header(1, 3)); // EM_386
    assert_refused(&["--", file.path()], &[file.path()]);
}

#[test]
fn refuses_elf64_not_x86() {
    let file = TempFile::new("elf64-aarch64", &elf_header(2, 183)); // EM_AARCH64
    assert_refused(&["--", file.path()], &[file.path()]);
}

/// A 1 GiB .bss does not fit in a 512 MiB VM: refused with one line, never a kernel panic.
#[test]
fn refuses_program_larger_than_memory() {
    let prog = programs().join("bss_1g-static");
    assert_refused(&["--mem", "512M", "--cpus", "1", "--", prog.to_str().unwrap()], &[]);
}
