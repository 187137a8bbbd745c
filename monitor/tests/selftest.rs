//! Integration tests that boot the kernel with the built `hrt` binary and check what
//! `hrt selftest` reports: the summary line, exit statuses, and kernel panics.
//!
//! Every test here boots a VM, and `cargo test` runs them in parallel (as many at once as the
//! host has cores, unless `--test-threads` says otherwise). The kernel's tests must stay correct
//! when their vCPUs share host cores with other VMs; they only get slower. On a 2-core host
//! that emulates guest ring 0 this file takes about 25 s in parallel and 32 s one VM at a time.

use std::io::Read;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A VM that runs longer than this is taken to be hung and is killed.
const TIME_LIMIT: Duration = Duration::from_secs(300);

struct Run {
    status: ExitStatus,
    stderr: String,
}

impl Run {
    fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// `(passed, failed)` from the plain summary line `N passed, M failed`.
    fn summary(&self) -> Option<(u32, u32)> {
        self.stderr.lines().rev().find_map(|line| {
            let (passed, failed) = line.trim().split_once(" passed, ")?;
            let failed = failed.strip_suffix(" failed")?;
            Some((passed.parse().ok()?, failed.parse().ok()?))
        })
    }

    /// Names of the tests reported as `test NAME ok (N ms)`.
    fn passed_tests(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter_map(|l| {
                let rest = l.strip_prefix("test ")?;
                let (name, tail) = rest.split_once(' ')?;
                tail.starts_with("ok").then_some(name)
            })
            .collect()
    }
}

/// Runs `hrt ARGS`, killing it after `TIME_LIMIT`.
fn hrt(args: &[&str]) -> Run {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_hrt"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run hrt");
    let mut pipe = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for hrt") {
            break status;
        }
        if started.elapsed() > TIME_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = reader.join().unwrap();
            panic!("`hrt {}` did not finish within {TIME_LIMIT:?}; stderr:\n{stderr}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stderr = reader.join().unwrap();
    eprintln!("`hrt {}`: {:?} in {:.1} s", args.join(" "), status.code(), started.elapsed().as_secs_f64());
    Run { status, stderr }
}

/// Asserts a run that exited 0, printed `N passed, 0 failed` with N >= `min_passed`, and no FAIL.
fn assert_all_passed(args: &[&str], min_passed: u32) -> Run {
    let run = hrt(args);
    let context = format!("`hrt {}`; stderr:\n{}", args.join(" "), run.stderr);
    assert_eq!(run.code(), Some(0), "exit status of {context}");
    assert!(!run.stderr.contains("FAIL"), "a test failed in {context}");
    let (passed, failed) = run.summary().unwrap_or_else(|| panic!("no `N passed, M failed` line in {context}"));
    assert_eq!(failed, 0, "{context}");
    assert!(passed >= min_passed, "only {passed} tests passed (expected at least {min_passed}) in {context}");
    assert_eq!(run.passed_tests().len() as u32, passed, "`test NAME ok` lines disagree with the summary in {context}");
    run
}

/// The self-tests that the issue requires, by the names the kernel gives them.
const REQUIRED_TESTS: &[&str] = &[
    "paging",
    "fault_report",
    "buddy_stress",
    "heap",
    "threads_1000",
    "thread_fork",
    "tasks",
    "spinlock_counter",
    "condvar_pingpong",
    "fork_waits_for_lock_holders",
    "barrier",
    "waitqueue",
    "ipi",
    "spin_loop_shapes",
    "sleep",
    "random",
];

fn full_run(cpus: &str) {
    let run = assert_all_passed(&["selftest", "--cpus", cpus], 12);
    let passed = run.passed_tests();
    for name in REQUIRED_TESTS {
        assert!(passed.contains(name), "test {name} did not run and pass with {cpus} CPU(s); stderr:\n{}", run.stderr);
    }
    assert!(!passed.iter().any(|t| t.starts_with("crash_")), "a crash_ test ran without being named");
}

#[test]
fn selftest_1_cpu() {
    full_run("1");
}

#[test]
fn selftest_2_cpus() {
    full_run("2");
}

#[test]
fn selftest_4_cpus() {
    full_run("4");
}

#[test]
fn selftest_idle_halt() {
    let run = assert_all_passed(&["selftest", "--idle", "halt", "--cpus", "2"], 12);
    assert!(run.stderr.contains("idle halt"), "the kernel did not report halting idle CPUs:\n{}", run.stderr);
}

#[test]
fn selftest_two_numa_zones() {
    let run = assert_all_passed(&["selftest", "--numa", "2", "--cpus", "2", "--filter", "buddy"], 1);
    assert!(run.passed_tests().contains(&"buddy_stress"), "buddy_stress did not run:\n{}", run.stderr);
    assert!(run.stderr.contains("2 zone"), "the kernel did not report two zones:\n{}", run.stderr);
}

#[test]
fn selftest_preemption_on() {
    let run = assert_all_passed(&["selftest", "--preempt", "1000", "--cpus", "1", "--filter", "preemption"], 1);
    assert_eq!(run.passed_tests(), ["preemption"], "stderr:\n{}", run.stderr);
}

#[test]
fn selftest_boot_only() {
    let run = hrt(&["selftest", "--cpus", "2", "--filter", "-"]);
    assert_eq!(run.code(), Some(0), "stderr:\n{}", run.stderr);
    assert_eq!(run.summary(), Some((0, 0)), "stderr:\n{}", run.stderr);
}

/// The `KERNEL PANIC on CPU n, thread ...: MESSAGE` line; asserts that it names the CPU and thread.
fn panic_line(run: &Run) -> &str {
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("KERNEL PANIC"))
        .unwrap_or_else(|| panic!("no KERNEL PANIC line; stderr:\n{}", run.stderr));
    let cpu = line.split_once("CPU ").map(|(_, rest)| rest).unwrap_or("");
    assert!(cpu.starts_with(|c: char| c.is_ascii_digit()), "the panic line names no CPU: {line}");
    assert!(line.contains("thread "), "the panic line names no thread: {line}");
    line
}

/// Runs the crashing self-test `name` on `cpus` vCPUs; it must end with the panic status.
fn crashed(name: &str, cpus: &str) -> Run {
    let run = hrt(&["selftest", "--cpus", cpus, "--filter", name]);
    assert_eq!(run.code(), Some(101), "exit status; stderr:\n{}", run.stderr);
    run
}

#[test]
fn crash_page_fault_is_reported() {
    let run = crashed("crash_page_fault", "2");
    let line = panic_line(&run);
    assert!(line.contains("Page fault"), "{line}");
    assert!(line.contains("vector 14"), "{line}");
    let regs = run
        .stderr
        .lines()
        .find(|l| l.contains("cr2="))
        .unwrap_or_else(|| panic!("no register line with cr2; stderr:\n{}", run.stderr));
    for field in ["rip=0x", "rsp=0x", "cr2=0x28 ", "error=0x"] {
        assert!(regs.contains(field), "`{field}` missing from: {regs}");
    }
}

#[test]
fn crash_panic_is_reported() {
    let run = crashed("crash_panic", "2");
    let line = panic_line(&run);
    assert!(line.contains("deliberate panic"), "the panic message is missing: {line}");
}

#[test]
fn a_kernel_stack_overflow_is_reported() {
    let run = crashed("crash_kernel_stack_overflow", "1");
    let line = panic_line(&run);
    assert!(line.contains("overflowed its 16 KiB kernel stack"), "the panic message is missing: {line}");
}

#[test]
fn unknown_filter_lists_tests() {
    let run = hrt(&["selftest", "--cpus", "1", "--filter", "nosuchtest"]);
    assert_ne!(run.code(), Some(0), "stderr:\n{}", run.stderr);
    assert!(run.stderr.contains("nosuchtest"), "stderr:\n{}", run.stderr);
    let listed: Vec<&str> = run.stderr.lines().map(str::trim).collect();
    for name in REQUIRED_TESTS.iter().chain(&["crash_page_fault", "crash_panic", "crash_kernel_stack_overflow"]) {
        assert!(listed.contains(name), "test {name} is not listed; stderr:\n{}", run.stderr);
    }
}
