//! Signals sent to `hrt` on the host (Ctrl-C, SIGTERM, SIGHUP) reach the program as they would
//! reach it natively (issue 10): its handlers run, an ignored one changes nothing, and without
//! a handler the default action ends it, even while its threads are blocked in a host call.

mod common;
use common::hostile::{build, hrt_cmd, repo_root};
use std::io::{BufRead, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `cmd` (stdin an idle pipe), waits for its "ready" line, sends `sig`, and returns the
/// exit status as a shell reports it (128 + signal for a killed process) and the rest of
/// stdout; None if it did not end within 20 s.
fn signal_after_ready(mut cmd: Command, sig: libc::c_int) -> Option<(Option<i32>, String)> {
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let _stdin = child.stdin.take();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, sig) };
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if let Some(status) = child.try_wait().unwrap() {
            let mut rest = String::new();
            out.read_to_string(&mut rest).unwrap();
            use std::os::unix::process::ExitStatusExt;
            return Some((status.code().or(status.signal().map(|s| 128 + s)), rest));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

fn same_as_native(mode: &str, sig: libc::c_int) {
    let prog = build("sig_from_host", &[]);
    let mut native = Command::new(&prog);
    native.arg(mode);
    let want = signal_after_ready(native, sig).expect("the native run ends");
    for cpus in ["1", "2"] {
        let mut cmd = hrt_cmd();
        cmd.args(["run", "--cpus", cpus, "--"]).arg(&prog).arg(mode).current_dir(repo_root());
        let got = signal_after_ready(cmd, sig).unwrap_or_else(|| panic!("{mode} --cpus {cpus}: hrt did not end"));
        assert_eq!(got, want, "{mode} with signal {sig}, --cpus {cpus}: hrt (left) and Linux (right) differ");
    }
}

#[test]
fn handlers_see_signals_sent_to_hrt() {
    same_as_native("handler", libc::SIGINT);
    same_as_native("handler", libc::SIGTERM);
    same_as_native("handler", libc::SIGHUP);
}

#[test]
fn a_handler_runs_while_the_main_thread_is_blocked_on_the_host() {
    same_as_native("handler_read", libc::SIGTERM);
}

#[test]
fn the_default_action_ends_a_program_blocked_on_the_host() {
    same_as_native("blocked_read", libc::SIGTERM);
    same_as_native("blocked_read", libc::SIGINT);
}

#[test]
fn an_ignored_signal_changes_nothing() {
    same_as_native("ignore", libc::SIGINT);
}
