//! Hostile programs against the host: the monitor's own /proc entries, programs that are not
//! regular executables, closed standard descriptors. Each runs natively and under `hrt run`.

mod common;
use common::hostile::{assert_same, build, hrt, native, native_then_hrt, passes_natively_and_same_on_1_and_2_cpus};

/// A scratch directory with the symbolic links host_proc follows.
struct Links(std::path::PathBuf);

impl Links {
    fn new() -> Links {
        let dir = std::env::temp_dir().join(format!("hrt-host-proc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink("/proc/self/mem", dir.join("mem")).unwrap();
        std::os::unix::fs::symlink("/proc/self", dir.join("p")).unwrap();
        std::os::unix::fs::symlink("/proc", dir.join("proc")).unwrap();
        Links(dir)
    }
}

impl Drop for Links {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Natively /proc/self is the program ("own"); under hrt it would be the monitor, so every
/// spelling must be refused, and the program's own view (cmdline, comm, status, maps) must
/// describe the program on both sides.
#[test]
fn monitor_proc_entries_are_unreachable() {
    let prog = build("host_proc", &[]);
    let links = Links::new();
    let dir = links.0.to_str().unwrap();
    let linux = native(&prog, &[dir]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    assert!(!linux.stdout.contains("FOREIGN"), "natively: {}", linux.stdout);
    let got = hrt(&["--cpus", "2"], &prog, &[dir]);
    assert_eq!(got.code(), 0, "hrt: {got:?}");
    let mut cases = 0;
    for line in got.stdout.lines() {
        let (case, result) = line.split_once(": ").expect("case: result");
        match result {
            "yes" | "0" => {}
            "refused" => cases += 1,
            _ => panic!(
                "hrt: `{case}` gave `{result}` (the monitor's own /proc was reached)\n{}\nstderr:\n{}",
                got.stdout, got.stderr
            ),
        }
    }
    assert!(cases >= 12, "every memory case ran:\n{}", got.stdout);
    // The view lines are the same as natively.
    let view =
        |s: &str| s.lines().filter(|l| l.ends_with(": yes") || l.starts_with("kvm")).collect::<Vec<_>>().join("\n");
    assert_eq!(view(&linux.stdout), view(&got.stdout));
    let _ = assert_same;
}

/// The /proc directories of the other `hrt` processes the program can name are out of its reach
/// as its own monitor's are: a forked child's parent monitor and the parent's child monitor
/// (their memory read-write, environment, maps, /dev/kvm through `fd/3`: all reached before),
/// and the helper that holds the VM (found as the holder of a pidfd of the program's process,
/// whose `mem` gave the monitor's memory read-write). What `ps` reads stays readable.
#[test]
fn other_monitors_proc_entries_are_unreachable() {
    let prog = build("other_monitors", &[]);
    for cpus in ["1", "2"] {
        let got = hrt(&["--cpus", cpus], &prog, &[]);
        assert_eq!(got.code(), 0, "--cpus {cpus}: {got:?}");
        assert!(got.stdout.contains("other monitors: done"), "--cpus {cpus}: {}", got.stdout);
        assert!(!got.stdout.contains("REACHED"), "--cpus {cpus}: another monitor was reached:\n{}", got.stdout);
        assert_eq!(
            got.stdout.matches("reached: 0").count(),
            2,
            "--cpus {cpus}: the VM holder was reached:\n{}",
            got.stdout
        );
        assert_eq!(got.stdout.matches(": readable").count(), 6, "--cpus {cpus}: what ps reads:\n{}", got.stdout);
        assert_eq!(got.stdout.matches(": refused").count(), 18, "--cpus {cpus}: every case ran:\n{}", got.stdout);
    }
}

/// `ls -la /proc/self/` (each entry was EACCES, and `..`): the directory's entries with their
/// types and permissions, the links `cwd`, `root` and `exe` (the program), `.` and `..` as
/// natively. What is below the entries (`fd/`, `task/`, `mem`'s contents) stays refused
/// (`monitor_proc_entries_are_unreachable`).
#[test]
fn proc_self_lists_as_natively() {
    let (linux, got) =
        native_then_hrt("proc_self_list", &[], |linux| linux.stdout.contains("stat /proc/self/.. is /proc 1"));
    assert_same("proc_self_list", &linux, &got);
}

/// Signals the program ignores stay ignored in the host programs it execs, glibc's own 32 and
/// 33 included (tests/programs/hostile/ignored_glibc_signals.c: after a fork, by posix_spawn and
/// by system()): the monitor set them with glibc's sigaction, which refuses those two.
#[test]
fn ignored_signals_stay_ignored_across_exec_glibcs_own_too() {
    passes_natively_and_same_on_1_and_2_cpus("ignored_glibc_signals", Some("system: SigIgn:"));
}

/// `/proc/self/status` (and thread-self's, a task's), `/proc/self/stat` and `/proc/self/statm`
/// (tests/programs/hostile/proc_status.c): Linux's lines in its order (the status ended after
/// NSsid, and statm was EACCES), Threads the threads running, the signal sets of the main
/// thread, another thread and the process, VmRSS growing and falling by the 64 MiB touched and
/// given back, VmHWM keeping the peak, stat's and statm's figures those of status.
#[test]
fn proc_self_status_stat_and_statm_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("proc_status", Some("VmRSS grew by 64-72 MiB: yes"));
}

/// The argument and environment strings execve leaves on the stack
/// (tests/programs/hostile/arg_area.c): one run in order, argv[0] lowest (they were pushed in
/// reverse: libuv's `uv_setup_args` took the arguments' room as negative and its process-title
/// test failed; a title cleared over that room crashed the program), stat's fields 48-51 naming
/// the areas (they were `hrt`'s own), and /proc/self/cmdline and environ read from the areas as
/// they are now: a title the program wrote shows, one that runs on into the environment area as
/// Linux shows it, `setenv` does not change environ.
#[test]
fn argument_area_is_one_run_and_shows_the_title() {
    passes_natively_and_same_on_1_and_2_cpus("arg_area", Some("arg area: done"));
}

/// `PROG` run natively and under hrt with standard descriptor `closed` closed; the "case" lines
/// the program prints on stderr.
fn with_closed(prog: &std::path::Path, closed: i32, mode: &str) -> (String, String) {
    use std::os::unix::process::CommandExt;
    let cases = |mut cmd: std::process::Command| {
        // SAFETY: close() is async-signal-safe; the child closes its own descriptor.
        unsafe {
            cmd.pre_exec(move || {
                libc::close(closed);
                Ok(())
            })
        };
        let out = common::hostile::run(cmd, None);
        assert!(!out.hung && out.code() == 0, "{out:?}");
        out.stderr.lines().filter(|l| l.starts_with("case ")).collect::<Vec<_>>().join("\n")
    };
    let mut n = std::process::Command::new(prog);
    n.arg(mode);
    let mut h = common::hostile::hrt_cmd();
    h.args(["run", "--cpus", "1", "--"]).arg(prog).arg(mode);
    (cases(n), cases(h))
}

/// With stdout or stdin closed, the program's fd 1 or 0 is closed too (EBADF, and the number
/// is the lowest free one for its next open), whatever hrt opened for itself; ioctl on a
/// non-terminal is ENOTTY before its argument is looked at; SIZE_MAX lengths are EFAULT.
#[test]
fn closed_standard_descriptors_and_argument_order() {
    let prog = build("host_stdio", &[]);
    for (fd, mode) in [(1, "out"), (0, "in")] {
        let (linux, got) = with_closed(&prog, fd, mode);
        assert!(linux.contains("EBADF"), "natively: {linux}");
        assert_eq!(linux, got, "fd {fd} closed: native (left) and hrt (right) differ");
    }
    let linux = native(&prog, &["open"]);
    let cases = |s: &str| s.lines().filter(|l| l.starts_with("case ")).collect::<Vec<_>>().join("\n");
    assert!(cases(&linux.stderr).contains("ENOTTY"), "natively: {}", linux.stderr);
    // With the vCPU threads' seccomp filter (the default) and without it.
    for options in [&["--cpus", "1"][..], &["--cpus", "1", "--no-seccomp"]] {
        let got = hrt(options, &prog, &["open"]);
        assert_eq!(cases(&linux.stderr), cases(&got.stderr), "{options:?}");
    }
}

/// A file of the monitor's own /proc directory that the program would get for its own (here
/// its page map) is refused with EACCES and one `hrt:` line, never silently.
#[test]
fn the_monitors_page_map_is_refused_with_a_line() {
    let prog = build("proc_pagemap", &[]);
    let linux = native(&prog, &[]);
    assert!(linux.stdout.contains("opened"), "natively: {linux:?}");
    let got = hrt(&["--cpus", "1"], &prog, &[]);
    assert_eq!(got.stdout, "open /proc/self/pagemap: Permission denied\n".repeat(2), "{got:?}");
    let lines: Vec<_> = got.stderr.lines().filter(|l| l.contains("pagemap")).collect();
    assert!(lines.len() == 1 && lines[0].starts_with("hrt: "), "{}", got.stderr);
}

/// Files Linux refuses to execute are refused before any VM exists, with one `hrt:` line and
/// status 126 (found, cannot run), never read without limit or waited on.
#[test]
fn programs_linux_refuses_to_execute() {
    let dir = std::env::temp_dir().join(format!("hrt-host-refuse-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let real = build("host_stdio", &[]);
    let bytes = std::fs::read(&real).unwrap();
    let mut cases: Vec<(String, std::path::PathBuf)> = vec![("/dev/zero".into(), "/dev/zero".into())];
    let fifo = dir.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a C string path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o700) }, 0);
    cases.push(("FIFO without a writer".into(), fifo));
    let noexec = dir.join("noexec");
    std::fs::write(&noexec, &bytes).unwrap();
    cases.push(("no execute permission".into(), noexec));
    cases.push(("a directory".into(), dir.clone()));
    let patched = |name: &str, at: usize, value: &[u8]| {
        let mut b = bytes.clone();
        b[at..at + value.len()].copy_from_slice(value);
        let p = dir.join(name);
        std::fs::write(&p, &b).unwrap();
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        p
    };
    // e_phentsize at 54, e_phnum at 56, e_phoff at 32.
    cases.push(("e_phentsize 0".into(), patched("phent0", 54, &0u16.to_le_bytes())));
    cases.push(("e_phentsize 1".into(), patched("phent1", 54, &1u16.to_le_bytes())));
    cases.push(("e_phoff past the end".into(), patched("phoff", 32, &(bytes.len() as u64).to_le_bytes())));
    // A file this process has open for writing ("Text file busy").
    let busy = patched("busy", 0, &[]);
    let _writer = std::fs::OpenOptions::new().write(true).open(&busy).unwrap();
    cases.push(("open for writing".into(), busy));
    for (what, path) in &cases {
        let native_err = std::process::Command::new(path).output().err();
        let got = hrt(&["--cpus", "1"], path, &[]);
        assert!(!got.hung, "{what}: hrt hung");
        assert_eq!(got.code(), 126, "{what}: {got:?} (natively: {native_err:?})");
        let lines: Vec<_> = got.stderr.lines().collect();
        assert!(lines.len() == 1 && lines[0].starts_with("hrt: "), "{what}: {}", got.stderr);
        if what != "a directory" {
            // Linux refuses each of these too (EACCES, ENOEXEC or ETXTBSY).
            let e = native_err.unwrap_or_else(|| panic!("{what}: Linux ran it"));
            let errno = e.raw_os_error();
            assert!(matches!(errno, Some(libc::EACCES | libc::ENOEXEC | libc::ETXTBSY)), "{what}: {e}");
        }
    }
    let missing = hrt(&[], &dir.join("missing"), &[]);
    assert_eq!(missing.code(), 127, "{missing:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--sandbox DIR`: the program opens files under DIR and /dev/null, nothing else (natively,
/// without a sandbox, everything opens).
#[test]
fn sandbox_limits_opens_to_its_directory() {
    let prog = build("host_sandbox", &[]);
    let base = std::env::temp_dir().join(format!("hrt-host-sandbox-{}", std::process::id()));
    let inside = base.join("inside");
    std::fs::create_dir_all(&inside).unwrap();
    let outside = base.join("outside");
    std::fs::write(&outside, "not for the program\n").unwrap();
    let (i, o) = (inside.to_str().unwrap(), outside.to_str().unwrap());
    let linux = native(&prog, &[i, o]);
    assert_eq!(linux.stdout.matches(": opened").count(), 5, "natively: {linux:?}");
    let got = hrt(&["--cpus", "1", "--sandbox", i], &prog, &[i, o]);
    let _ = std::fs::remove_dir_all(&base);
    assert_eq!(
        got.stdout,
        "create under DIR: opened\nread under DIR: opened\nread outside: EACCES\n\
         create outside through ..: EACCES\nwrite /dev/null: opened\n",
        "{got:?}"
    );
    assert_eq!(got.code(), 0);
}

/// `ps` (procps) finds itself through `/proc/<its pid>`, which under hrt is the monitor's
/// directory: it must see its own line as natively (its pid, its parent, its name and argv),
/// while the monitor's entries stay out of reach (`monitor_proc_entries_are_unreachable`).
#[test]
fn ps_lists_itself_as_natively() {
    let Ok(ps) = which("ps") else {
        panic!("ps (procps) is not installed: apt-get install procps");
    };
    let args = ["-o", "pid=,ppid=,comm=,args="];
    let own_line = |mut cmd: std::process::Command| -> String {
        let child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
        let pid = child.id().to_string();
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{cmd:?}: {:?}\n{stdout}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
        let line = stdout.lines().find(|l| l.split_whitespace().next() == Some(pid.as_str()));
        let line = line.unwrap_or_else(|| panic!("{cmd:?}: no line for its own pid {pid}:\n{stdout}"));
        // The pid differs between the runs; the parent (this test), name and argv must not.
        line.split_whitespace().skip(1).collect::<Vec<_>>().join(" ")
    };
    let mut n = std::process::Command::new(&ps);
    n.args(args);
    let linux = own_line(n);
    assert_eq!(linux, format!("{} ps {} {}", std::process::id(), ps.display(), args.join(" ")));
    for cpus in ["1", "2"] {
        let mut h = common::hostile::hrt_cmd();
        h.args(["run", "--cpus", cpus, "--"]).arg(&ps).args(args);
        assert_eq!(own_line(h), linux, "--cpus {cpus}");
    }
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or(())
}

/// The program's own /proc settings that are `hrt`'s process's too (the OOM score and its
/// adjustment, audit ids, core-dump filter, timer slack, I/O counters, the user namespace's
/// maps: tests/programs/hostile/proc_self_settings.c) read and write as natively; they were
/// EACCES (redis: "Unable to read oom_score_adj").
#[test]
fn own_proc_settings_read_and_write_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("proc_self_settings", Some("oom_score_adj    7|"));
}

/// `/proc/self/limits` (tests/programs/hostile/proc_self_limits.c): the program's own limits in
/// Linux's layout, also after it lowers some, as natively (it was EACCES; `hrt`'s own limits
/// would not show the program's changes).
#[test]
fn own_proc_limits_are_the_programs() {
    passes_natively_and_same_on_1_and_2_cpus(
        "proc_self_limits",
        Some("Max core file size        4096                 8192"),
    );
}

/// `/proc/self/environ` and `/proc/self/auxv` (tests/programs/hostile/proc_self_environ.c):
/// the program's initial environment strings (a change in place shows, `setenv`'s new ones do
/// not) and its auxiliary vector, as natively (both were EACCES).
#[test]
fn own_proc_environ_and_auxv_are_the_programs() {
    passes_natively_and_same_on_1_and_2_cpus("proc_self_environ", Some("environ is the initial environment: 1"));
}

/// The files the monitor makes up for the VM (CPU lists, /proc/cpuinfo, /proc/self/stat), whose
/// memory files it keeps and opens again: separate offsets per open, the same bytes after many
/// other such files (also in a forked child), EBADF for a write, and a second read after lseek,
/// as natively.
#[test]
fn made_up_files_open_as_files_of_their_own() {
    passes_natively_and_same_on_1_and_2_cpus("synthetic_opens", Some("synthetic opens done"));
}

/// A program that maps its own text over itself again, `MAP_SHARED` from a copy of its
/// executable (tests/programs/hostile/shared_text.c), then makes many system calls and spins
/// in a token ring there: the kernel's code rewrites (calls, spin-wait loops) must leave shared
/// memory alone, or the bytes reach the file. Until stop 98 the copy on disk changed ("rw",
/// the descriptor open for writing) or the run ended in "KVM_RUN failed: Bad address" ("ro").
/// Same output as natively at 1 and 2 vCPUs, the file unchanged, nothing rewritten there.
#[test]
fn code_rewrites_never_write_into_a_shared_file_mapping() {
    let prog = build("shared_text", &[]);
    for mode in ["rw", "ro"] {
        let linux = native(&prog, &[mode]);
        assert!(linux.code() == 0 && linux.stdout.contains("the file is unchanged: yes"), "natively: {linux:?}");
        for cpus in ["1", "2"] {
            let got = hrt(&["-v", "--cpus", cpus], &prog, &[mode]);
            assert_same(&format!("shared_text {mode} at --cpus {cpus}"), &linux, &got);
            let rewritten =
                got.stderr.lines().any(|l| l.contains("spin-wait loops examined") && l.contains("rewritten"));
            assert!(!rewritten, "{mode} --cpus {cpus}: a spin loop in shared text was rewritten:\n{}", got.stderr);
        }
    }
}
