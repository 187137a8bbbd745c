//! Hostile programs about system calls: pointers and lengths that leave the program's mappings,
//! values that must not reach a privileged register, signals (SIGPIPE, blocked signals),
//! routing of every call the forwarder implements. Each is compared with the same program run
//! natively (exit status, errno, output).

mod common;
use common::hostile::{assert_same, build, hrt, native};

/// Builds `name`, runs it natively and under `hrt run --cpus 1`, and compares.
fn same_as_linux(name: &str, args: &[&str]) {
    let prog = build(name, &[]);
    let linux = native(&prog, args);
    let got = hrt(&["--cpus", "1"], &prog, args);
    assert_same(name, &linux, &got);
}

/// read/write/poll/readv/getrandom and others with ranges that run out of the program's
/// mappings, and pointers into just-munmapped memory: the same short counts and EFAULTs as
/// Linux (the monitor checks forwarded ranges against the kernel's page map, the kernel its own).
#[test]
fn ranges_past_the_mappings_fault_as_on_linux() {
    same_as_linux("calls_ranges", &[]);
}

/// An unimplemented call made 50 times is reported once, with its name (also for calls the
/// kernel's table does not list), and an unknown number once.
#[test]
fn unimplemented_calls_are_reported_once_by_name() {
    let prog = build("calls_enosys", &[]);
    let linux = native(&prog, &[]);
    let got = hrt(&["--cpus", "1"], &prog, &[]);
    assert_same("calls_enosys", &linux, &got);
    let lines: Vec<&str> = got.stderr.lines().filter(|l| l.contains("is not implemented")).collect();
    assert_eq!(lines.len(), 2, "one line per call expected:\n{}", got.stderr);
    assert!(lines.iter().any(|l| l.contains("system call 163 (acct)")), "{}", got.stderr);
    assert!(lines.iter().any(|l| l.contains("system call 1000 (no such Linux call)")), "{}", got.stderr);
}

/// creat, link, linkat, symlink, symlinkat, preadv, pwritev and fchmodat reach the forwarder
/// (they answered ENOSYS before) and behave as on Linux.
#[test]
fn forwarded_file_calls_behave_as_on_linux() {
    same_as_linux("calls_forwarded", &[]);
}

/// Non-canonical and kernel-half values for the TLS base (arch_prctl, clone's CLONE_SETTLS:
/// these panicked the kernel through the FS_BASE MSR), futex words, robust lists, sigaltstack,
/// timeouts: EPERM, EFAULT, EINVAL as on Linux. A thread started on a non-canonical stack dies of
/// SIGBUS (#SS), one on a kernel-half stack of SIGSEGV, taking the process with it.
#[test]
fn privileged_values_are_refused_as_on_linux() {
    let prog = build("calls_privileged", &[]);
    for mode in ["all", "stack", "kstack"] {
        let linux = native(&prog, &[mode]);
        let got = hrt(&["--cpus", "1"], &prog, &[mode]);
        assert_same(&format!("calls_privileged {mode}"), &linux, &got);
    }
}
