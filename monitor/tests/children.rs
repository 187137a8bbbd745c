//! `--children hrt|host`: tests/programs/hostile/procs_children.c runs itself as a child in
//! every way a program starts one (system, popen, posix_spawn, bash pipelines and `$(...)`,
//! fork + exec) and each such child prints who mapped its vDSO: `vdso=linux` natively and for
//! a host process, `vdso=hrt` for an HRT process (HRT's own vDSO has no ELF note). Under
//! `--children hrt` every child, grandchildren included, must say `hrt` and everything else
//! (argv[0], environment, descriptors, directory, exit statuses, signals, exec errors) must be
//! as natively; under `--children host` only the program says `hrt` (what its forked child
//! execs is a host program too).

mod common;
use common::hostile::{assert_same, build, hrt, hrt_cmd, native, run, Outcome};

/// The native run, checked to be a real one (every case ran, every probe line says `linux`).
fn native_run(prog: &std::path::Path) -> Outcome {
    let linux = native(prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(linux.stdout.contains("missing program: posix_spawn error 2"), "natively: {}", linux.stdout);
    assert!(!linux.stdout.contains("vdso=hrt"), "natively: {}", linux.stdout);
    linux
}

/// `hrt`'s output with the probe lines of the tags in `hrt_tags` (None: every one) checked to say
/// `vdso=hrt` and turned into `vdso=linux`; the other probe lines must say `linux` already.
fn as_native(got: &Outcome, hrt_tags: Option<&[&str]>) -> Outcome {
    let mut out = String::new();
    for line in got.stdout.lines() {
        let tag = line.split(':').next().unwrap_or("").to_lowercase();
        let expect_hrt = hrt_tags.is_none_or(|t| t.contains(&tag.as_str()));
        let (want, other) = if expect_hrt { ("vdso=hrt", "vdso=linux") } else { ("vdso=linux", "vdso=hrt") };
        let (want_up, other_up) = (want.to_uppercase(), other.to_uppercase());
        assert!(
            !line.contains(other) && !line.contains(&other_up),
            "line `{line}`: expected {want}\nstdout:\n{}\nstderr:\n{}",
            got.stdout,
            got.stderr
        );
        let line = line.replace(want, "vdso=linux").replace(&want_up, "VDSO=LINUX");
        out.push_str(&line);
        out.push('\n');
    }
    Outcome { status: got.status, stdout: out, stderr: got.stderr.clone(), hung: got.hung }
}

#[test]
fn with_children_hrt_every_exec_runs_as_an_hrt_process() {
    let prog = build("procs_children", &[]);
    let linux = native_run(&prog);
    for cpus in ["1", "2"] {
        let got = hrt(&["--cpus", cpus, "--children", "hrt"], &prog, &[]);
        let probes = got.stdout.matches("vdso=hrt").count() + got.stdout.matches("VDSO=HRT").count();
        assert_eq!(probes, linux.stdout.to_lowercase().matches("vdso=linux").count(), "{}", got.stdout);
        assert_same(&format!("--children hrt --cpus {cpus}"), &linux, &as_native(&got, None));
        // A child killed by a signal is reported by its waiter only, as natively.
        assert_eq!(got.stderr, linux.stderr, "stderr under --children hrt --cpus {cpus}");
    }
}

#[test]
fn with_children_host_only_the_program_is_an_hrt_process() {
    let prog = build("procs_children", &[]);
    let linux = native_run(&prog);
    let got = hrt(&["--cpus", "1", "--children", "host"], &prog, &[]);
    // The forked child's exec, too, starts the host program (in the child's own process).
    assert_same("--children host", &linux, &as_native(&got, Some(&["parent"])));
    let default = hrt(&["--cpus", "1"], &prog, &[]);
    assert_eq!(default.stdout, got.stdout, "host is the default");
}

/// The child `hrt` runs with the parent's options: `--cpus 3` (more vCPUs than this host may
/// have) shows in a grandchild's `nproc`, which counts the CPUs it may run on.
#[test]
fn children_get_the_parents_options() {
    let mut cmd = hrt_cmd();
    cmd.args(["run", "--cpus", "3", "--children", "hrt", "--", "/bin/sh", "-c", "nproc; /bin/sh -c nproc"]);
    let got = run(cmd, None);
    assert_eq!((got.code(), got.stdout.as_str()), (0, "3\n3\n"), "{got:?}");
}

/// A script whose interpreter is itself a script runs on Linux; `hrt` does not nest scripts, so
/// under `--children hrt` the child `hrt` says why and its status is 126, as a shell reports a
/// command it cannot run. Under `--children host` it runs as natively.
#[test]
fn a_program_hrt_cannot_run_is_reported_by_the_child() {
    let dir = std::env::temp_dir().join(format!("hrt-children-nested-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let inner = dir.join("inner");
    let outer = dir.join("outer");
    std::fs::write(&inner, "#!/bin/sh\necho inner ran\n").unwrap();
    std::fs::write(&outer, format!("#!{}\n", inner.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    for f in [&inner, &outer] {
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let script = format!("'{}'; echo status $?", outer.display());
    let mut sh = std::process::Command::new("/bin/sh");
    sh.args(["-c", &script]);
    let linux = run(sh, None);
    assert_eq!(linux.stdout, "inner ran\nstatus 0\n", "natively: {linux:?}");
    for (mode, stdout) in [("host", "inner ran\nstatus 0\n"), ("hrt", "status 126\n")] {
        let mut cmd = hrt_cmd();
        cmd.args(["run", "--cpus", "1", "--children", mode, "--", "/bin/sh", "-c", &script]);
        let got = run(cmd, None);
        assert_eq!((got.code(), got.stdout.as_str()), (0, stdout), "--children {mode}: {got:?}");
        if mode == "hrt" {
            assert!(got.stderr.starts_with("hrt: ") && got.stderr.lines().count() == 1, "{}", got.stderr);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The program starts with the signals `hrt` was started with ignored ignored and the mask it
/// was started with, as an exec'd program would (`nohup hrt run ...`, a spawned child of an
/// HRT program that ignores SIGPIPE): SIGINT, SIGHUP and SIGPIPE ignored, SIGUSR1 blocked.
#[test]
fn the_program_inherits_ignored_signals_and_the_mask() {
    use std::os::unix::process::CommandExt;
    let script = "kill -INT $$; kill -HUP $$; kill -USR1 $$; echo survived; yes | head -c 4; echo";
    let start = |mut cmd: std::process::Command| {
        // SAFETY: only async-signal-safe calls on the child's own dispositions and mask.
        unsafe {
            cmd.pre_exec(|| {
                for sig in [libc::SIGINT, libc::SIGHUP, libc::SIGPIPE] {
                    libc::signal(sig, libc::SIG_IGN);
                }
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGUSR1);
                libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
                Ok(())
            });
        }
        run(cmd, None)
    };
    let mut sh = std::process::Command::new("/bin/sh");
    sh.args(["-c", script]);
    let linux = start(sh);
    assert_eq!((linux.code(), linux.stdout.as_str()), (0, "survived\ny\ny\n\n"), "natively: {linux:?}");
    for mode in ["host", "hrt"] {
        let mut cmd = hrt_cmd();
        cmd.args(["run", "--cpus", "1", "--children", mode, "--", "/bin/sh", "-c", script]);
        let got = start(cmd);
        assert_same(&format!("inherited signal state, --children {mode}"), &linux, &got);
    }
}

/// processes.rs's program (file actions, process groups, `kill` to a group, SIGCHLD, CLOEXEC,
/// exec errors) under `--children hrt`: as natively, its `setsid` case included, whose child
/// runs `ps -p $$` under a child `hrt` of its own.
#[test]
fn spawned_children_behave_as_on_linux_as_hrt_processes() {
    let prog = build("procs_spawn", &[]);
    let linux = native(&prog, &[]);
    assert!(linux.code() == 0 && linux.stdout.contains("SIGCHLD handler ran: 1"), "natively: {linux:?}");
    assert!(linux.stdout.contains("own session"), "natively: {linux:?}");
    let got = hrt(&["--cpus", "1", "--children", "hrt"], &prog, &[]);
    assert_same("procs_spawn under --children hrt", &linux, &got);
}
