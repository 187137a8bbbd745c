//! Hostile programs about the program's memory: what it gets must read zero, ranges it does not
//! own give EFAULT or SIGSEGV as on Linux. Each is compared with the same program run natively.

mod common;
use common::hostile::{assert_same, build, hrt, native};

#[test]
fn fresh_brk_and_calloc_memory_reads_zero() {
    let prog = build("brk_zero", &[]);
    let linux = native(&prog, &[]);
    assert_eq!(linux.code(), 0, "natively: {linux:?}");
    for cpus in ["1", "2"] {
        let got = hrt(&["--cpus", cpus], &prog, &[]);
        assert_same(&format!("brk_zero --cpus {cpus}"), &linux, &got);
    }
}
