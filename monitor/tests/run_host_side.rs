//! `hrt run` behaviour seen from the host: signals sent to `hrt`, and clock reads that never
//! enter the kernel (the vDSO). Each test builds its own small static C program.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

mod common;

const HRT: &str = env!("CARGO_BIN_EXE_hrt");

/// Compiles `source` statically into cargo's scratch directory for integration tests (under
/// target/, so nothing is left in /tmp) and returns the binary.
fn build(name: &str, source: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("host-side-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let bin = dir.join(name);
    let status = Command::new("gcc").args(["-O2", "-static", "-o"]).arg(&bin).arg(&src).status().expect("gcc");
    assert!(status.success(), "gcc failed for {name}");
    bin
}

const SLEEPER: &str = r#"
#include <stdio.h>
#include <unistd.h>
int main(void) { printf("ready\n"); fflush(stdout); sleep(60); return 0; }
"#;

/// Starts the sleeper under hrt, waits for its first line, sends `sig`, returns the status.
fn stop_with(sig: libc::c_int) -> Option<std::process::ExitStatus> {
    use std::io::BufRead;
    let bin = build("sleeper", SLEEPER);
    let mut child = common::with_default_signals(&mut Command::new(HRT))
        .args(["run", "--cpus", "1", "--"])
        .arg(&bin)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    for _ in 0..200 {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    None
}

#[test]
fn sigterm_to_hrt_exits_143() {
    assert_eq!(stop_with(libc::SIGTERM).and_then(|s| s.code()), Some(143));
}

/// Ctrl-C ends `hrt` by SIGINT, as it ends the program natively: a shell script that ran it
/// then stops too (bash goes on after a child that exited with 130).
#[test]
fn ctrl_c_ends_hrt_by_sigint() {
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(stop_with(libc::SIGINT).and_then(|s| s.signal()), Some(libc::SIGINT));
}

const CLOCKS: &str = r#"
#include <stdio.h>
#include <time.h>
#include <sys/time.h>
int main(void) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 100; i++) clock_gettime(CLOCK_MONOTONIC, &b);
    struct timeval tv;
    gettimeofday(&tv, 0);
    time_t now = time(0);
    int monotonic = b.tv_sec > a.tv_sec || (b.tv_sec == a.tv_sec && b.tv_nsec >= a.tv_nsec);
    printf("monotonic %d, wall clock agrees %d\n", monotonic, now - tv.tv_sec <= 1 && now > 1600000000);
    return 0;
}
"#;

#[test]
fn clocks_are_read_without_system_calls() {
    let bin = build("clocks", CLOCKS);
    let out = common::hostile::run(
        {
            let mut c = Command::new(HRT);
            c.args(["run", "--strace", "--cpus", "1", "--"]).arg(&bin);
            c
        },
        None,
    );
    assert!(!out.hung, "hung: {out:?}");
    let (stdout, stderr) = (&out.stdout, &out.stderr);
    assert_eq!(out.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(stdout, "monotonic 1, wall clock agrees 1\n");
    for call in ["clock_gettime(", "gettimeofday(", "time("] {
        assert!(!stderr.lines().any(|l| l.contains(&format!("] {call}"))), "{call} entered the kernel:\n{stderr}");
    }
    // The trace itself works: the program's write is there, forwarded.
    assert!(stderr.lines().any(|l| l.contains("] write(1,") && l.ends_with(" F")), "no traced write:\n{stderr}");
}

const IDLE: &str = r#"
#include <stdio.h>
#include <sys/select.h>
int main(void) { struct timeval tv = {4, 0}; select(0, 0, 0, 0, &tv); puts("done"); return 0; }
"#;

/// An idle program at `--cpus 1` (a server waiting for requests; here a 4 s `select`) leaves
/// its host CPU alone: its idle vCPU halts after 10 ms of polling. Before, it polled for good
/// and `hrt` used ~0.9 s of CPU time per second; the bound here (1 s for the 4 s, start-up and
/// teardown included) leaves a busy host's start-up room.
#[test]
#[allow(clippy::zombie_processes)] // wait4 below reaps it, with its resource usage
fn an_idle_program_leaves_the_host_cpu_alone() {
    let bin = build("idle", IDLE);
    let child = Command::new(HRT).args(["run", "--cpus", "1", "--"]).arg(&bin).stdout(Stdio::piped()).spawn().unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 writes it and the status for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "status {status:#x}");
    let cpu = Duration::new(usage.ru_utime.tv_sec as u64, usage.ru_utime.tv_usec as u32 * 1000)
        + Duration::new(usage.ru_stime.tv_sec as u64, usage.ru_stime.tv_usec as u32 * 1000);
    assert!(cpu < Duration::from_millis(1000), "hrt used {cpu:?} of CPU time while its program slept 4 s");
}
