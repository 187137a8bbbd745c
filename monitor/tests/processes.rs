//! Child processes (`--children host`): tests/programs/hostile/procs_spawn.c (system, popen,
//! posix_spawn with file actions and attributes, vfork, wait4/waitid, kill, process groups,
//! SIGCHLD, CLOEXEC, exec errors) and procs_hostile.c (exec with bad pointers from a vfork
//! child, /proc/self/exe), each compared with its native run with one vCPU and with two; a
//! process sharing the descriptor table refused with one line (fork itself: fork.rs).

mod common;
use common::hostile::{
    assert_same, build, build_dynamic, hrt, native, passes_natively_and_same_on_1_and_2_cpus, repo_root,
};

#[test]
fn spawned_children_behave_as_on_linux() {
    passes_natively_and_same_on_1_and_2_cpus("procs_spawn", Some("SIGCHLD handler ran: 1"));
}

/// The same program linked dynamically (glibc's shared posix_spawn, system and popen).
#[test]
fn spawned_children_of_a_dynamic_program() {
    let source = repo_root().join("tests/programs/hostile/procs_spawn.c");
    let prog = build_dynamic(&source, "procs_spawn", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    let got = hrt(&["--cpus", "2"], &prog, &[]);
    assert_same("dynamic procs_spawn", &linux, &got);
}

#[test]
fn exec_checks_the_programs_pointers() {
    passes_natively_and_same_on_1_and_2_cpus("procs_hostile", Some("argv entry unmapped: exited 14"));
}

/// `/proc/<hrt's pid>/exe` is the program's own /proc/self/exe: exec runs the program, never hrt.
#[test]
fn exec_of_the_monitors_proc_entry_runs_the_program() {
    let prog = build("procs_hostile", &[]);
    let got = hrt(&["--cpus", "1"], &prog, &["monitor-proc"]);
    assert_eq!(got.code(), 0, "{got:?}");
    assert_eq!(got.stdout, "exe child: argc 2\nmonitor's exe: exited 6\n", "{got:?}");
}

/// A child process sharing the parent's descriptor table (CLONE_FILES without CLONE_VM) is not
/// supported: ENOSYS, said once on stderr.
#[test]
fn a_process_sharing_descriptors_is_refused_with_one_line() {
    let prog = build("procs_hostile", &[]);
    let got = hrt(&["--cpus", "1"], &prog, &["clone-files"]);
    assert_eq!(got.code(), 0, "{got:?}");
    assert_eq!(got.stdout, "clone-files: -1 errno 38\nclone-files again: -1 errno 38\n");
    assert_eq!(got.stderr.matches("is not supported: returning ENOSYS").count(), 1, "{}", got.stderr);
}
