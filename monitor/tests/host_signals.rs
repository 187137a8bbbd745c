//! Signals sent to `hrt` on the host (Ctrl-C, SIGTERM, SIGHUP) reach the program as they would
//! reach it natively (issue 10): its handlers run, an ignored one changes nothing, and without
//! a handler the default action ends it, even while its threads are blocked in a host call.

mod common;
use common::hostile::{build, hrt_cmd, repo_root};
use common::with_default_signals;
use std::io::{BufRead, Read};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A child started by `start_ready`: its stdin pipe (held open, idle) and its stdout.
struct Ready {
    child: std::process::Child,
    _stdin: Option<std::process::ChildStdin>,
    out: std::io::BufReader<std::process::ChildStdout>,
}

/// Starts `cmd` with the signals' default actions, stdin an idle pipe and stderr discarded, and
/// waits for its "ready" line.
fn start_ready(cmd: &mut Command) -> Ready {
    let mut child =
        with_default_signals(cmd).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let _stdin = child.stdin.take();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line, "ready\n");
    Ready { child, _stdin, out }
}

/// Waits up to 20 s for `child` to end; kills and reaps it if it does not (None).
fn wait_ended(child: &mut std::process::Child) -> Option<std::process::ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Spawns `cmd` with the signals' default actions, stdin /dev/null, stderr piped and stdout
/// as given.
fn spawn_with_stderr(cmd: &mut Command, stdout: Stdio) -> std::process::Child {
    with_default_signals(cmd).stdin(Stdio::null()).stdout(stdout).stderr(Stdio::piped()).spawn().unwrap()
}

/// The exit status as a shell reports it: 128 + signal for a killed process.
fn shell_code(status: std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.code().or(status.signal().map(|s| 128 + s))
}

/// Starts `cmd` (stdin an idle pipe), waits for its "ready" line, sends `sig`, and returns the
/// exit status as a shell reports it (128 + signal for a killed process) and the rest of
/// stdout; None if it did not end within 20 s.
fn signal_after_ready(mut cmd: Command, sig: libc::c_int) -> Option<(Option<i32>, String)> {
    let mut r = start_ready(&mut cmd);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(r.child.id() as i32, sig) };
    let status = wait_ended(&mut r.child)?;
    let mut rest = String::new();
    r.out.read_to_string(&mut rest).unwrap();
    Some((shell_code(status), rest))
}

/// Starts `cmd`, waits for "ready", waits until the process has stopped (it stops itself, or
/// `stop_with` stops it), continues it with SIGCONT, sends `then` if not 0, and returns its
/// status and the rest of its stdout as `signal_after_ready` does; None if it never stopped
/// or never ended. The child is reaped with waitpid (which std's `Child` cannot do with
/// WUNTRACED), not with `Child::wait`.
#[allow(clippy::zombie_processes)]
fn stop_and_continue(mut cmd: Command, stop_with: libc::c_int, then: libc::c_int) -> Option<(Option<i32>, String)> {
    let Ready { mut child, _stdin, mut out } = start_ready(&mut cmd);
    let pid = child.id() as i32;
    if stop_with != 0 {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(pid, stop_with) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child; WUNTRACED reports it once stopped.
    let got = unsafe { libc::waitpid(pid, &mut status, libc::WUNTRACED) };
    if got != pid || !libc::WIFSTOPPED(status) {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    }
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    if then != 0 {
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: as above.
        unsafe { libc::kill(pid, then) };
    }
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        let mut status = 0;
        // SAFETY: as above.
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            let mut rest = String::new();
            out.read_to_string(&mut rest).unwrap();
            let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { 128 + libc::WTERMSIG(status) };
            return Some((Some(code), rest));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Each run gets a process group of its own: Linux discards SIGTSTP sent to a process whose
/// group is orphaned (as it is when the test runs under a job-control shell's background job),
/// and a group whose parent (this test) is in another group of the same session is not.
fn stops_as_native(mode: &str, stop_with: libc::c_int, then: libc::c_int) {
    use std::os::unix::process::CommandExt;
    let prog = build("sig_from_host", &[]);
    let mut native = Command::new(&prog);
    native.arg(mode).process_group(0);
    let want = stop_and_continue(native, stop_with, then).expect("the native run stops and ends");
    for cpus in ["1", "2"] {
        let mut cmd = hrt_cmd();
        cmd.args(["run", "--cpus", cpus, "--"]).arg(&prog).arg(mode).current_dir(repo_root()).process_group(0);
        let got = stop_and_continue(cmd, stop_with, then)
            .unwrap_or_else(|| panic!("{mode} --cpus {cpus}: hrt did not stop, or did not end"));
        assert_eq!(got, want, "{mode}, --cpus {cpus}: hrt (left) and Linux (right) differ");
    }
}

/// raise(SIGSTOP) stops the process (hrt stops itself, so a shell sees a stopped job); SIGCONT
/// continues it and reaches the program's handler.
#[test]
fn a_stop_signal_stops_the_program_until_continued() {
    stops_as_native("stop_self", 0, 0);
}

/// Ctrl-Z (SIGTSTP) stops a program even while it is blocked in a host call; after SIGCONT a
/// SIGTERM still ends it.
#[test]
fn ctrl_z_stops_a_program_blocked_on_the_host() {
    stops_as_native("blocked_read", libc::SIGTSTP, libc::SIGTERM);
}

#[test]
fn user_signals_sent_to_hrt_reach_handlers() {
    same_as_native("usr1", libc::SIGUSR1);
}

/// Every catchable signal is passed on, real-time ones and 64 (SIGRTMAX) included.
#[test]
fn other_signals_sent_to_hrt_reach_handlers() {
    for sig in [libc::SIGURG, libc::SIGPROF, libc::SIGRTMIN() + 5, 64] {
        same_as_native("others", sig);
    }
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

/// A vCPU stuck with the kernel's interrupts masked (tests/programs/hostile/wedge_irqs.c: the
/// program sets the kernel's software interrupt flag, which one ring lets it do, and spins)
/// never lets the kernel take a signal. Before, `hrt` then ignored every Ctrl-C and SIGTERM;
/// now a Ctrl-C the kernel leaves untaken for two seconds ends `hrt` (by SIGINT), with a line
/// that says why. Only with the kernel in ring 3 (a PVM host), where the flag is
/// software. The program says it is wedged through a shared file mapping (a system call
/// would unmask the flag).
#[test]
fn ctrl_c_stops_a_vm_whose_kernel_cannot_take_it() {
    use common::hostile::run;
    let info = run(
        {
            let mut c = hrt_cmd();
            c.arg("info");
            c
        },
        None,
    );
    if !info.stdout.contains("PVM") {
        eprintln!("skipped: the kernel runs in ring 3 only on PVM hosts");
        return;
    }
    let prog = build("wedge_irqs", &[]);
    let dir = std::env::temp_dir().join(format!("hrt-wedge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("wedged");
    let _ = std::fs::remove_file(&marker);
    let mut cmd = hrt_cmd();
    cmd.args(["run", "--cpus", "1", "--"]).arg(&prog).arg(&marker).current_dir(repo_root());
    let mut child = spawn_with_stderr(&mut cmd, Stdio::null());
    let start = Instant::now();
    while std::fs::read(&marker).map_or(true, |b| b.first() != Some(&b'w')) {
        if start.elapsed() > Duration::from_secs(60) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the program did not say it was wedged");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id() as i32;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let status = wait_ended(&mut child);
    let _ = std::fs::remove_dir_all(&dir);
    let mut err = String::new();
    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let status = status.expect("hrt did not end on SIGINT");
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGINT), "{err}");
    assert!(err.contains("has not taken signal 2"), "{err}");
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
    // A splice from a datagram socket holds the pipe's lock while it waits: `hrt` closing the
    // pipe at its end waited for good (state D) until the blocked call was interrupted first.
    same_as_native("blocked_splice", libc::SIGTERM);
}

#[test]
fn an_ignored_signal_changes_nothing() {
    same_as_native("ignore", libc::SIGINT);
}

/// A background job that reads its terminal (or writes it, with TOSTOP) behaves as natively:
/// stopped by SIGTTIN (SIGTTOU) until brought to the foreground and continued, its SIGCONT
/// handler run; with the signal ignored, EIO (or the write goes through); with a handler, the
/// handler runs and the read (write, `tcsetattr`) fails with EINTR; with SIGTTOU blocked, a
/// write and a `tcsetattr` go through (they stopped `hrt` before). The terminal is a pseudo-terminal that
/// sig_tty's `job` mode (a small job-control shell) makes its session's controlling terminal.
#[test]
fn background_terminal_access_stops_or_signals_as_natively() {
    use common::hostile::run;
    let prog = build("sig_tty", &[]);
    let hrt = env!("CARGO_BIN_EXE_hrt");
    for mode in [
        "read_dfl",
        "read_dfl_eintr",
        "read_ign",
        "read_blocked",
        "read_handler",
        "write_dfl",
        "write_ign",
        "write_handler",
        "write_blocked",
        "setattr_blocked",
        "setattr_handler",
    ] {
        let mut native = Command::new(&prog);
        native.arg("job").arg(&prog).arg(mode);
        let want = run(native, None);
        assert!(want.status.success() && want.stdout.contains("job: exited 0"), "{mode} natively: {want:?}");
        for cpus in ["1", "2"] {
            let mut cmd = Command::new(&prog);
            cmd.arg("job").arg(hrt).args(["run", "--cpus", cpus, "--"]).arg(&prog).arg(mode);
            let got = run(cmd, None);
            assert!(!got.hung, "{mode} --cpus {cpus}: hung: {got:?}");
            assert_eq!(
                got.stdout, want.stdout,
                "{mode}, --cpus {cpus}: hrt (left) and Linux (right) differ: {}",
                got.stderr
            );
        }
    }
}

/// A stopped background job (a read of its terminal stopped it) sent SIGTERM and then SIGCONT,
/// as bash's `kill %1` does, ends with status 143 as natively; before, `hrt` took the SIGTERM
/// on but its restarted host read stopped it again before the program's kernel acted on it.
#[test]
fn a_stopped_background_job_ends_on_sigterm_and_sigcont() {
    use common::hostile::run;
    let prog = build("sig_tty", &[]);
    let mut native = Command::new(&prog);
    native.arg("job_term").arg(&prog).arg("read_dfl");
    let want = run(native, None);
    assert_eq!(want.stdout, "job: stopped by SIGTTIN\njob: status 143\n", "natively: {want:?}");
    for cpus in ["1", "2"] {
        let mut cmd = Command::new(&prog);
        cmd.arg("job_term")
            .arg(env!("CARGO_BIN_EXE_hrt"))
            .args(["run", "--cpus", cpus, "--"])
            .arg(&prog)
            .arg("read_dfl");
        let got = run(cmd, None);
        assert!(!got.hung, "--cpus {cpus}: hung: {got:?}");
        assert_eq!(got.stdout, want.stdout, "--cpus {cpus}: hrt (left) and Linux (right) differ: {}", got.stderr);
    }
}

/// A SIGTERM sent to `hrt` at moments spread over its start (every 0.5 ms of the first 24 ms: before
/// the VM exists, while the kernel boots, as the program starts): it ends `hrt` as it ends a
/// program that has not started (143), or the program's handler takes it (prints "handled",
/// exits 0). Nothing else: the monitor passes signals on only once the kernel's handler is in
/// place (`ChannelHeader::signals_ready`; the monitor serves the channel before the kernel
/// runs), so an early one can neither reach a kernel without its handler nor be lost. (With
/// that check left out, 1 run of this test in 2 failed: a kernel panic, status 101.)
#[test]
fn a_signal_at_any_moment_of_the_start_kills_or_is_handled() {
    let prog = build("sig_early", &[]);
    let mut seen = std::collections::BTreeMap::new();
    for step in 0..48u64 {
        let mut cmd = hrt_cmd();
        cmd.args(["run", "--cpus", "2"]).arg(&prog);
        let mut child = spawn_with_stderr(&mut cmd, Stdio::piped());
        std::thread::sleep(Duration::from_micros(step * 500));
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let status = wait_ended(&mut child).expect("hrt did not end within 20 s");
        let mut out = String::new();
        child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        let mut err = String::new();
        child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let code = shell_code(status);
        let fine = (code == Some(143) && out.is_empty()) || (code == Some(0) && out == "handled\n");
        assert!(
            fine,
            "SIGTERM {} ms after the start: status {code:?}, stdout {out:?}, stderr:\n{err}",
            step as f64 / 2.0
        );
        *seen.entry(code).or_insert(0) += 1;
    }
    eprintln!("outcomes (status: runs): {seen:?}");
}

/// A foreground job on a terminal (`sig_tty fg`, a small job-control shell on a
/// pseudo-terminal that restores its modes as bash does) that turns echo off and dies of
/// SIGTERM, SIGQUIT or SIGSEGV leaves the terminal echoing, as natively, where the shell puts
/// its modes back after a job a signal killed (`hrt` exits with 128 + the signal: it puts them
/// back itself; until 2026-12-03 echo stayed off). A job that stops itself with SIGTSTP stops
/// `hrt` with SIGTSTP (a shell's `$?` 148), not SIGSTOP (147).
#[test]
fn a_job_killed_or_stopped_on_a_terminal_leaves_it_as_natively() {
    use common::hostile::run;
    let prog = build("sig_tty", &[]);
    let cases: [&[&str]; 4] = [&["noecho_die", "15"], &["noecho_die", "3"], &["noecho_die", "11"], &["tstp_self"]];
    for case in cases {
        let mut native = Command::new(&prog);
        native.arg("fg").arg(&prog).args(case);
        let want = run(native, None);
        assert!(want.status.success() && want.stdout.contains("fg: status"), "{case:?} natively: {want:?}");
        for cpus in ["1", "2"] {
            let mut cmd = Command::new(&prog);
            cmd.arg("fg").arg(env!("CARGO_BIN_EXE_hrt")).args(["run", "--cpus", cpus, "--"]).arg(&prog).args(case);
            let got = run(cmd, None);
            assert!(!got.hung, "{case:?} --cpus {cpus}: hung: {got:?}");
            assert_eq!(
                got.stdout, want.stdout,
                "{case:?} --cpus {cpus}: hrt (left) and Linux (right) differ: {}",
                got.stderr
            );
        }
    }
}
