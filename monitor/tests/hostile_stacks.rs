//! Hostile programs about stacks and page protections: stack overflow in the main thread and
//! in a pthread, writes to read-only pages, reads of PROT_NONE pages, mprotect back to
//! read-write, clone with a junk stack pointer, and thousands of threads. Each is compared with
//! the same program run natively (exit status and stdout).

mod common;
use common::hostile::{assert_same, build, hrt, native};

/// Runs `prog CASE` natively and under `hrt run --cpus N` for each N and compares.
fn same_as_linux(prog: &std::path::Path, case: &str, want: i32, cpus: &[&str]) {
    let linux = native(prog, &[case]);
    assert_eq!(linux.code(), want, "{case} natively: {linux:?}");
    for n in cpus {
        let got = hrt(&["--cpus", n], prog, &[case]);
        assert_same(&format!("{case} --cpus {n}"), &linux, &got);
        if want == 139 {
            assert!(got.stderr.contains("Segmentation fault (address"), "{case}: hrt's stderr:\n{}", got.stderr);
        }
    }
}

#[test]
fn recursion_past_the_main_stack_faults() {
    same_as_linux(&build("stack_guard", &[]), "main", 139, &["1"]);
}

#[test]
fn recursion_past_a_thread_stack_faults() {
    same_as_linux(&build("stack_guard", &[]), "thread", 139, &["1", "2"]);
}

#[test]
fn writing_a_read_only_page_faults() {
    same_as_linux(&build("stack_guard", &[]), "write_readonly", 139, &["2"]);
}

#[test]
fn reading_prot_none_memory_faults() {
    let prog = build("stack_guard", &[]);
    same_as_linux(&prog, "read_none", 139, &["1"]);
    same_as_linux(&prog, "read_mprotect_none", 139, &["2"]);
}

#[test]
fn executing_a_page_without_prot_exec_faults() {
    same_as_linux(&build("stack_guard", &[]), "exec_readonly", 139, &["2"]);
}

#[test]
fn mprotect_back_to_read_write_keeps_the_data() {
    same_as_linux(&build("stack_guard", &[]), "restore", 0, &["1", "2"]);
}

#[test]
fn clone_with_a_stack_that_is_not_writable_memory_faults() {
    let prog = build("stack_clone_junk", &[]);
    for case in ["unmapped", "readonly", "low"] {
        same_as_linux(&prog, case, 139, &["2"]);
    }
    same_as_linux(&prog, "valid", 0, &["2"]);
}
